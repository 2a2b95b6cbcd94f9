package main_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestStopCutOffSaysSo: a worker whose NATS server is gone, running no
// call, stopped on SIGTERM with a grace under nats.go's 10s drain wait
// logged "grace period over" ("the grace period ended before the
// worker's subscriptions drained; no call was running") once its grace
// had passed: it waited for drains the server could not confirm. It now
// says it stopped without draining, not connected to NATS, and stops
// without its grace running out.
func TestStopCutOffSaysSo(t *testing.T) {
	port := natstest.FreePort(t)
	s := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", port })
	w := startWorker(t, "--nats", s.ClientURL(), "--grace", "5s")
	s.Shutdown()
	s.WaitForShutdown()
	if _, ok := w.stderr.wait(func(l string) bool { return strings.Contains(l, "NATS connection lost") }); !ok {
		t.Fatalf("the worker did not notice:\n%s", w.stderr)
	}
	if code := w.stop(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, w.stderr)
	}
	log := w.stderr.String()
	if !strings.Contains(log, "not connected to NATS: stopped without draining") {
		t.Errorf("the log does not say the worker stopped without draining, not connected:\n%s", log)
	}
	if strings.Contains(log, "grace period over") || strings.Contains(log, "drained") {
		t.Errorf("the log says the grace period ran out before a drain:\n%s", log)
	}
	if !strings.Contains(log, `"msg":"stopped"`) {
		t.Errorf("the log does not say the worker stopped:\n%s", log)
	}
}
