package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/internal/natstest"
)

// heldNATS listens at a NATS URL and holds the connections it takes,
// forwarding nothing, until release connects them to the server at
// target: a NATS server that the gateway reaches but that has not
// answered yet.
type heldNATS struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func holdNATS(t *testing.T, addr string) *heldNATS {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldNATS{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	return h
}

func (h *heldNATS) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// release pipes every held connection to target.
func (h *heldNATS) release(t *testing.T, target string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		s, err := net.Dial("tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		h.conns = append(h.conns, s)
		go func() { io.Copy(s, c); s.Close() }()
		go func() { io.Copy(c, s); c.Close() }()
	}
}

// TestGatewayHTTPBeforeNATS: mcp serve --http started its endpoint only
// once connected to NATS and its gateway made, so while it connected
// /healthz did not answer and a liveness probe restarted a gateway that
// was fine. It now listens first: /healthz answers at once, /readyz
// answers 503 saying the gateway is connecting to NATS, /metrics serves
// what exists (toolbus_nats_connected 0); once the server answers the
// gateway serves and /readyz answers ready.
func TestGatewayHTTPBeforeNATS(t *testing.T) {
	natsAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	natsURL := "nats://" + natsAddr
	h := holdNATS(t, natsAddr)
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	var stderr natstest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--nats", natsURL, "mcp", "serve", "--listen", "127.0.0.1:0", "--http", httpAddr}, strings.NewReader(""), io.Discard, &stderr)
	}()
	defer func() {
		cancel()
		<-done
		if t.Failed() {
			t.Log(stderr.String())
		}
	}()
	natstest.WaitFor(t, "the gateway to reach its NATS server", func() bool { return h.held() > 0 })
	base := "http://" + httpAddr
	if code, body := natstest.HTTPGet(base + "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz while connecting: %d %q", code, body)
	}
	if code, body := natstest.HTTPGet(base + "/readyz"); code != 503 || !strings.Contains(body, "not ready: connecting to NATS at "+natsURL) {
		t.Errorf("/readyz while connecting: %d %q, want 503 saying it connects to %s", code, body, natsURL)
	}
	code, metrics := natstest.HTTPGet(base + "/metrics")
	if code != 200 {
		t.Errorf("/metrics while connecting: %d %q", code, metrics)
	}
	for _, want := range []string{"toolbus_nats_connected 0", "go_goroutines "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics while connecting lacks %q:\n%s", want, metrics)
		}
	}

	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t)
	})
	h.release(t, s.Addr().String())
	natstest.WaitFor(t, "the gateway to serve", func() bool { return strings.Contains(stderr.String(), "MCP gateway listening") })
	natstest.WaitFor(t, "/readyz to answer ready", func() bool {
		code, body := natstest.HTTPGet(base + "/readyz")
		return code == 200 && body == "ready\n"
	})
	_, metrics = natstest.HTTPGet(base + "/metrics")
	for _, want := range []string{"toolbus_nats_connected 1", "toolbus_gateway_sessions 0", "go_goroutines "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics once serving lacks %q:\n%s", want, metrics)
		}
	}
}

// TestGatewayHTTPAddressInUseBeforeNATS: an --http address already held
// was found only after the gateway had connected to NATS and made its
// gateway. The endpoint now listens before any NATS work: the gateway
// exits with the endpoint's error and never connects to its server.
func TestGatewayHTTPAddressInUseBeforeNATS(t *testing.T) {
	held, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t)
	})
	code, _, errs := toolctl(t, "--nats", "nats://"+s.Addr().String(), "mcp", "serve", "--listen", "127.0.0.1:0", "--http", held.Addr().String())
	if code != exitError {
		t.Errorf("exit %d, want %d\n%s", code, exitError, errs)
	}
	for _, want := range []string{"--http " + held.Addr().String(), "address already in use", "another worker or gateway"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errs)
		}
	}
	v, err := s.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.TotalConnections != 0 {
		t.Errorf("the gateway connected to NATS %d times before finding its --http address in use", v.TotalConnections)
	}
}
