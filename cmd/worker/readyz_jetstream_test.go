package main_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestReadyzJetStreamDown: the worker stays connected to NATS while the
// cluster's JetStream loses its quorum (two of three nodes down), where
// the worker keeps sessions' groups, session pins, kept results and the
// durable queue. /readyz said "ready" throughout, though every call
// needing JetStream failed: it says "ready, degraded: JetStream
// unavailable …" now (core calls of tools without a session still run),
// and "ready" again once the quorum is back.
func TestReadyzJetStreamDown(t *testing.T) {
	cl := natstest.NewCluster(t)
	_, _, get := opsEndpoint(t, "--nats", cl.Nodes()[0].ClientURL(), "--kv-replicas", "3")
	waitReadyz := func(what string, ok func(code int, body string) bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, body := get("/readyz")
			if ok(code, body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz: %d %q, want %s", code, strings.TrimSpace(body), what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitReadyz("ready", func(code int, body string) bool { return code == http.StatusOK && body == "ready\n" })
	restore := cl.LoseQuorum()
	waitReadyz("ready, degraded: JetStream unavailable", func(code int, body string) bool {
		return code == http.StatusOK && strings.HasPrefix(body, "ready, degraded: JetStream unavailable")
	})
	restore()
	waitReadyz("ready again", func(code int, body string) bool { return code == http.StatusOK && body == "ready\n" })
}
