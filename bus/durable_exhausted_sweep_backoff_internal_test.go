package bus

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSweepExhaustedUnreadBacksOff: a worker looking for the exhausted
// calls a flood pushed out of the exhausted stream, whose read of a
// tool's consumer kept failing otherwise than "not found" (the calls
// stream's leader away, the worker's permissions changed), read it again
// each second for as long as it failed. The wait between two looks at
// such a tool now doubles with each failed look, up to a ceiling; the
// failure is warned of once, and once the consumer can be read the tool
// is looked at again and swept, which is logged once.
func TestSweepExhaustedUnreadBacksOff(t *testing.T) {
	var opts *server.Options
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "worker", Password: "w"}}
		opts = o
	})
	// Each read of the tool's consumer the server refuses comes back as
	// a permissions violation naming its subject: the test counts them.
	info := "$JS.API.CONSUMER.INFO." + wire.StreamCalls + ".put"
	var (
		mu    sync.Mutex
		reads []time.Time
	)
	nc, err := nats.Connect("", nats.InProcessServer(s), nats.UserInfo("worker", "w"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if strings.Contains(err.Error(), info) {
			mu.Lock()
			reads = append(reads, time.Now())
			mu.Unlock()
		}
	}))
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
	natstest.WaitFor(t, "the worker taking from the exhausted stream", func() bool {
		w.dur.mu.Lock()
		defer w.dur.mu.Unlock()
		return w.dur.exhaustedCC != nil
	})
	// Shorter waits than a worker's, in the same proportions: a look 10ms
	// after the message, a read given up after 50ms.
	const after, most = 10 * time.Millisecond, 640 * time.Millisecond
	w.dur.mu.Lock()
	w.dur.sweepAfter, w.dur.sweepMax, w.dur.sweepRead = after, most, 50*time.Millisecond
	w.dur.mu.Unlock()

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
	// A message in the exhausted stream that is no advisory: the worker
	// looks for exhausted calls in the calls stream.
	if err := nc.Publish("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+wire.StreamCalls+".put", []byte("no advisory")); err != nil {
		t.Fatal(err)
	}
	const looks = 8
	natstest.WaitFor(t, "the worker's looks at the tool", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reads) >= looks
	})
	// Between the first look and the eighth the worker waited at least
	// after, 2*after, 4*after, … up to most (the reads' own time
	// aside); a busy machine only makes the waits longer. Looked at
	// each sweepAfter, the eight looks came within 8*(10+50)ms.
	var least time.Duration
	for i, wait := 1, after; i < looks; i, wait = i+1, min(2*wait, most) {
		least += wait
	}
	mu.Lock()
	took := reads[looks-1].Sub(reads[0])
	mu.Unlock()
	if took < least {
		t.Errorf("%d looks at a tool whose consumer could not be read within %v of the first; with the waits doubling from %v up to %v they take at least %v", looks, took, after, most, least)
	}
	if n := strings.Count(logs.String(), "reading a durable tool's consumer"); n != 1 {
		t.Errorf("warned %d times of the failed reads, want once:\n%s", n, logs.String())
	}

	// Readable again: the tool is looked at once more, and swept.
	reload()
	natstest.WaitFor(t, "the tool swept once its consumer is read", func() bool {
		return strings.Contains(logs.String(), "looked again for the exhausted calls of a durable tool left for later") && !w.dur.sweeping.Load()
	})
	if n := strings.Count(logs.String(), "looked again for the exhausted calls of a durable tool left for later"); n != 1 {
		t.Errorf("logged the sweep after the failed reads %d times, want once:\n%s", n, logs.String())
	}
}
