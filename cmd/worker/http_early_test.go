package main_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestHTTPBeforeNATS: the --http endpoint started only once the worker
// served, so while it waited for its NATS server (up to two minutes)
// /healthz did not answer and an orchestrator restarted a worker that
// was fine. It now listens first: /healthz answers at once, /readyz
// answers 503 saying the worker is connecting to NATS, /metrics serves
// what exists (toolbus_nats_connected 0); once the server is up the
// worker serves and /readyz answers ready.
func TestHTTPBeforeNATS(t *testing.T) {
	natsPort := natstest.FreePort(t)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	args := []string{"--log-format", "json", "--nats", natsURL, "--http", httpAddr}
	p := startProc(t, cleanEnv(t), workerBin, args...)
	base := "http://" + httpAddr
	natstest.WaitFor(t, "/healthz to answer while the worker waits for NATS", func() bool {
		code, _ := natstest.HTTPGet(base + "/healthz")
		return code == 200
	})
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
	if strings.Contains(p.stderr.String(), `"toolbus worker ready"`) {
		t.Fatalf("the worker is ready with no NATS server:\n%s", p.stderr)
	}

	natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natsPort })
	ready(t, p, args)
	if code, body := natstest.HTTPGet(base + "/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz once serving: %d %q", code, body)
	}
	_, metrics = natstest.HTTPGet(base + "/metrics")
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
	held, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	natsPort := natstest.FreePort(t)
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
