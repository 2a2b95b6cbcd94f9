package bus_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestUnanswerableRequestsLogBounded: requests the worker may not answer
// (no reply subject, or one outside the caller's inbox) are logged, but a
// caller sending nothing else must not fill the disk: at most 100 such
// lines a second, as for the calls answered without running, each cut
// short. Each was logged whole, one line per request: 2,000 requests with
// 10 KB call ids wrote 2,000 lines of 10 KB.
func TestUnanswerableRequestsLogBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	var logs natstest.Buffer
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	nc := natstest.Connect(t, s)
	long := strings.Repeat("x", 10_000)
	const n = 2000
	start := time.Now()
	for i := range n {
		reply := ""
		if i%2 == 1 {
			reply = "not.an.inbox"
		}
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.SubjectCallPrefix + "echo", Reply: reply,
			Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}},
			Data:   []byte(`{"id":"` + long + `","input":{"text":"hi"}}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// A call after them, on the same connection: answered once the
	// worker has taken every request before it.
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.SubjectCallPrefix + "echo", Reply: inbox,
		Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}},
		Data:   []byte(`{"id":"after","input":{"text":"after"}}`)}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := sub.NextMsg(guard)
		if err != nil {
			t.Fatalf("the call after the flood: %v", err)
		}
		if strings.Contains(string(m.Data), `"final"`) {
			break
		}
	}
	elapsed := time.Since(start)
	text := logs.String()
	lines := strings.Count(text, "\n")
	if most := 100 * (int(elapsed/time.Second) + 2); lines > most {
		t.Errorf("%d log lines for %d unanswerable requests in %v, want at most %d", lines, n, elapsed, most)
	}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if len(l) > 2000 {
			t.Fatalf("a line of %d bytes: %.300s…", len(l), l)
		}
	}
}
