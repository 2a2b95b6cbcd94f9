package opshttp

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestReadyzBesideSilentNATS: NATSReady held its lock through the round
// trip to a NATS server that did not answer (2 s), so every /readyz that
// came meanwhile waited for it, past a probe's 1 s timeout. One /readyz
// waits for the round trip; the others answer the last one's result at
// once, and /healthz and /metrics never wait for it.
func TestReadyzBesideSilentNATS(t *testing.T) {
	s := natstest.Embedded(t, true)
	p := natstest.ProxyTo(t, s)
	nc := p.Conn(t)
	old := natsAnswer
	natsAnswer = 10 * time.Minute // the round trip ends only when the link does
	defer func() { natsAnswer = old }()
	natsReady := NATSReady(nc)
	reg := prometheus.NewRegistry()
	reg.MustRegister(NATSMetrics(nc.IsConnected, func() uint64 { return 0 })...)
	e, err := Start("127.0.0.1:0", reg, func() (bool, string) {
		if ok, why := natsReady(); !ok {
			return false, why
		}
		return true, "ready"
	}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	c := &http.Client{Timeout: 2 * natstest.Guard}
	get := func(path string) (int, error) {
		resp, err := c.Get("http://" + e.Addr + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	p.Pause()
	paused := true
	defer func() {
		if paused {
			p.Resume()
		}
	}()
	var answered atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, err := get("/readyz"); err != nil || code != http.StatusOK {
				t.Errorf("/readyz: %d %v", code, err)
			}
			answered.Add(1)
		}()
	}
	natstest.WaitFor(t, "one /readyz to answer while the other waits for the NATS server", func() bool { return answered.Load() == 1 })
	for _, path := range []string{"/healthz", "/metrics"} {
		if code, err := get(path); err != nil || code != http.StatusOK {
			t.Errorf("%s while /readyz waits for the NATS server: %d %v", path, code, err)
		}
	}
	p.Resume()
	paused = false
	wg.Wait()
}
