package main_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestWorkerExitsWhenConnectionClosed: the server closes the worker's
// connection for good (here: it answers a subject longer than its
// max_control_line with -ERR, which nats.go takes for fatal; it does not
// reconnect). The worker can serve nothing more, so it must say so and
// exit 1, for its supervisor to start it again. It lived on instead,
// serving nothing, its /healthz answering "ok" for ever.
func TestWorkerExitsWhenConnectionClosed(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", -1
		o.MaxControlLine = 600
	})
	cfg := t.TempDir() + "/worker.yaml"
	mustWrite(t, cfg, "groups:\n  - name: extra\n    description: More tools.\n")
	w := startWorker(t, "--nats", s.ClientURL(), "--config", cfg)
	nc := natstest.URLConn(t, s.ClientURL())
	inbox := nats.NewInbox()
	if _, err := nc.SubscribeSync(inbox); err != nil {
		t.Fatal(err)
	}
	// reset_tools stores the session's groups under a KV key of some 900
	// bytes: within the bus's bound, past this server's control line.
	session := strings.Repeat("s", 900)
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.SubjectCallPrefix + "reset_tools", Reply: inbox,
		Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}},
		Data:   []byte(`{"id":"r1","session":"` + session + `","input":{"extra":true}}`)}); err != nil {
		t.Fatal(err)
	}
	if code := w.exit(t); code != 1 {
		t.Fatalf("worker exit %d after its connection closed, want 1\n%s", code, w.stderr)
	}
	if !strings.Contains(w.stderr.String(), "NATS connection closed") {
		t.Errorf("the worker did not say its connection closed:\n%s", w.stderr)
	}
}
