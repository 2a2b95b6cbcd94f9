package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestEmbeddedStopSaysOthersLoseTheirBus: the worker whose embedded
// server the fleet runs on (README: Scaling out) stopped on SIGTERM once
// its own calls were done, and its server with it, saying only
// "draining" and "stopped", while other workers and callers were still
// connected: their running calls ended worker_lost, and nothing told
// the operator why nor what to do. It now warns, with the number of
// other connections, to stop those first or run a NATS cluster.
func TestEmbeddedStopSaysOthersLoseTheirBus(t *testing.T) {
	listen := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	a := startWorker(t, "--listen", listen, "--store-dir", t.TempDir())
	b := startWorker(t, "--nats", a.url, "--workspace", t.TempDir())
	natstest.URLConn(t, a.url) // a caller
	if code := a.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, a.stderr)
	}
	var warned bool
	for _, line := range strings.Split(a.stderr.String(), "\n") {
		var rec struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Others int    `json:"other_connections"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || !strings.Contains(rec.Msg, "embedded NATS server") {
			continue
		}
		warned = true
		if rec.Level != "WARN" || rec.Others != 2 || !strings.Contains(rec.Msg, "cluster") {
			t.Errorf("the warning: %s", line)
		}
	}
	if !warned {
		t.Errorf("no warning that the embedded server stops under 2 other connections:\n%s", a.stderr)
	}
	b.stop(t)
}
