package bus

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSweepExhaustedConsumerUnread: a worker's look for the exhausted
// calls a flood pushed out of the exhausted stream reads each tool's
// consumer of the calls stream first. A failed read of a message there
// was looked at again a second later, but a failed read of the consumer
// was only warned of: the tool was not looked at again, and its
// exhausted calls stayed in the calls stream unanswered. The tool is now
// among those the next look takes again, until its consumer is read.
func TestSweepExhaustedConsumerUnread(t *testing.T) {
	var opts *server.Options
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "worker", Password: "w"}}
		opts = o
	})
	nc, err := nats.Connect("", nats.InProcessServer(s), nats.UserInfo("worker", "w"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("put", "Put.", func(context.Context, struct{}) (string, error) { return "ok", nil })); err != nil {
		t.Fatal(err)
	}
	var logs natstest.Buffer
	w := serve(t, nc, tk, &WorkerOptions{Instance: "w", AnnounceInterval: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Durable: &DurableOptions{JetStream: natstest.JS(t, nc)}})

	// The worker may no longer read the tool's consumer (as when its
	// stream's leader is away).
	info := "$JS.API.CONSUMER.INFO." + wire.StreamCalls + ".put"
	reload := func(deny ...string) {
		t.Helper()
		o := opts.Clone()
		o.Users = []*server.User{{Username: "worker", Password: "w"}}
		if deny != nil {
			o.Users[0].Permissions = &server.Permissions{Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: deny}}
		}
		if err := s.ReloadOptions(o); err != nil {
			t.Fatal(err)
		}
	}
	reload(info)
	busy := w.dur.sweepExhausted(true, nil)
	if busy["put"] == nil {
		t.Fatalf("a look whose read of the tool's consumer failed: looks again at %v, want put", busy)
	}
	busy["put"].next = time.Time{} // its wait over
	if busy = w.dur.sweepExhausted(false, busy); busy["put"] == nil {
		t.Errorf("the look again, its read failed again: looks again at %v, want put", busy)
	}
	if n := strings.Count(logs.String(), "reading a durable tool's consumer"); n != 1 {
		t.Errorf("warned %d times of the failed reads, want once:\n%s", n, logs.String())
	}
	reload()
	if busy := w.dur.sweepExhausted(false, map[string]*sweepHeld{"put": {why: sweepUnread}}); len(busy) != 0 {
		t.Errorf("the look again, the consumer read: looks again at %v, want none", busy)
	}
}
