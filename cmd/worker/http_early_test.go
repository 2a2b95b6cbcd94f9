package main_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/internal/natstest"
)

// rangePort is a loopback port of from..to that was free a moment ago.
func rangePort(t *testing.T, from, to int) int {
	t.Helper()
	for port := from; port <= to; port++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no port of %d-%d is free", from, to)
	return 0
}

// httpGet GETs url: the status and body, or 0 and the error.
func httpGet(url string) (int, string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPBeforeNATS: the --http endpoint started only once the worker
// served, so while it waited for its NATS server (up to two minutes)
// /healthz did not answer and an orchestrator restarted a worker that
// was fine. It now listens first: /healthz answers at once, /readyz
// answers 503 saying the worker is connecting to NATS, /metrics serves
// what exists (toolbus_nats_connected 0); once the server is up the
// worker serves and /readyz answers ready.
func TestHTTPBeforeNATS(t *testing.T) {
	natsPort := rangePort(t, 51160, 51164)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", rangePort(t, 51165, 51169))
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	args := []string{"--log-format", "json", "--nats", natsURL, "--http", httpAddr}
	p := startProc(t, cleanEnv(t), workerBin, args...)
	base := "http://" + httpAddr
	natstest.WaitFor(t, "/healthz to answer while the worker waits for NATS", func() bool {
		code, _ := httpGet(base + "/healthz")
		return code == 200
	})
	if code, body := httpGet(base + "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz while connecting: %d %q", code, body)
	}
	if code, body := httpGet(base + "/readyz"); code != 503 || !strings.Contains(body, "not ready: connecting to NATS at "+natsURL) {
		t.Errorf("/readyz while connecting: %d %q, want 503 saying it connects to %s", code, body, natsURL)
	}
	code, metrics := httpGet(base + "/metrics")
	if code != 200 {
		t.Errorf("/metrics while connecting: %d %q", code, metrics)
	}
	for _, want := range []string{"toolbus_nats_connected 0", "go_goroutines "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics while connecting lacks %q:\n%s", want, metrics)
		}
	}
	if strings.Contains(p.stderr.String(), `"toolbus worker ready"`) {
		t.Fatalf("the worker is ready with no NATS server:\n%s", p.stderr)
	}

	natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natsPort })
	ready(t, p, args)
	if code, body := httpGet(base + "/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz once serving: %d %q", code, body)
	}
	_, metrics = httpGet(base + "/metrics")
	for _, want := range []string{"toolbus_nats_connected 1", "toolbus_worker_calls_in_flight 0", "go_goroutines "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics once serving lacks %q:\n%s", want, metrics)
		}
	}
	promtoolCheck(t, metrics)
}

// TestHTTPAddressInUseBeforeNATS: an --http address already held was
// found only after the worker had connected, subscribed and briefly
// taken calls, which were then cut. The endpoint now listens before any
// NATS work: the worker exits with the endpoint's error and never
// connects to its server.
func TestHTTPAddressInUseBeforeNATS(t *testing.T) {
	held, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", rangePort(t, 51165, 51169)))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	natsPort := rangePort(t, 51160, 51164)
	s := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natsPort })
	p := startProc(t, cleanEnv(t), workerBin, "--log-format", "json",
		"--nats", fmt.Sprintf("nats://127.0.0.1:%d", natsPort), "--http", held.Addr().String())
	if code := p.exit(t); code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, p.stderr)
	}
	for _, want := range []string{"--http " + held.Addr().String(), "address already in use", "another worker or gateway"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, p.stderr)
		}
	}
	v, err := s.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.TotalConnections != 0 {
		t.Errorf("the worker connected to NATS %d times before finding its --http address in use", v.TotalConnections)
	}
}
