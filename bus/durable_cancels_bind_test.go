package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableCancelsOlderRolesServesMeanwhile: a worker whose roles
// predate the cancels stream waits out the bind of it (5 s) before it
// goes on without it. Serve waited for that before it subscribed to
// calls, so such a worker took no call, durable or not, for its first
// 5 s. The stream is bound in the background: the worker serves a
// durable call at once, gives the stream up as before, and a stop,
// during the bind or after it, leaves its connection as it found it.
func TestDurableCancelsOlderRolesServesMeanwhile(t *testing.T) {
	conn := rolesWithout(t, wire.StreamCancels)
	const gaveUp = "without the cancels stream"
	base := map[*nats.Conn]int{}
	start := func(instance string) (*bus.Worker, *nats.Conn, *natstest.Buffer) {
		nc := conn(auth.SeedFile(auth.RoleWorker, ""))
		js := natstest.JS(t, nc)
		if _, err := js.AccountInfo(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		base[nc] = nc.NumSubscriptions()
		var log natstest.Buffer
		tk := toolkit.New(nil)
		mustAdd(t, tk, echoTool())
		w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: instance, AnnounceInterval: -1,
			Logger: slog.New(slog.NewTextHandler(&log, nil)), Durable: &bus.DurableOptions{JetStream: js}})
		if err != nil {
			t.Fatal(err)
		}
		return w, nc, &log
	}
	stop := func(w *bus.Worker, nc *nats.Conn) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("stopping %s: %v", w.Instance(), err)
		}
		if n := nc.NumSubscriptions() - base[nc]; n != 0 {
			t.Errorf("%s stopped left %d subscriptions on its connection", w.Instance(), n)
		}
	}
	c := newClient(t, conn(auth.SeedFile(auth.RoleCaller, "alice")), &bus.ClientOptions{Identity: "alice"})

	w, nc, log := start("w1")
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "meanwhile"}, Durable: true})
	if r.Text() != "meanwhile" {
		t.Fatalf("a durable call to a worker of older roles as it starts: %s %s", r.Code, r.Text())
	}
	if strings.Contains(log.String(), gaveUp) {
		t.Fatalf("the worker of older roles served its first call only once it gave up the cancels stream:\n%s", log)
	}
	natstest.WaitFor(t, "the worker giving the cancels stream up", func() bool { return strings.Contains(log.String(), gaveUp) })
	r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "after"}, Durable: true})
	if r.Text() != "after" {
		t.Fatalf("a durable call once the worker gave the cancels stream up: %s %s", r.Code, r.Text())
	}
	stop(w, nc)

	// Stopped while it binds the cancels stream: the bind ends with the
	// stop.
	w, nc, _ = start("w2")
	stop(w, nc)
}

// gatedJetStream is a server's JetStream whose binding of the cancels
// stream waits for open (or its context): a bind still under way.
type gatedJetStream struct {
	jetstream.JetStream
	open   chan struct{}
	asked  chan struct{} // closed when the cancels stream is first asked for
	askedO sync.Once
}

func (g *gatedJetStream) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if name == wire.StreamCancels {
		g.askedO.Do(func() { close(g.asked) })
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.JetStream.Stream(ctx, name)
}

// TestDurableCancelRecordedBeforeBind: a durable call cancelled while it
// waited in the queue, before the worker that takes it heard cancels, is
// not run when the worker takes it while its cancels stream is still
// being bound: the call waits for the bind and looks its cancel up.
func TestDurableCancelRecordedBeforeBind(t *testing.T) {
	s := natstest.Embedded(t, false)
	var ran atomic.Int32
	kit := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("effect", "Has an effect.", func(ctx context.Context, in struct{}) (string, error) {
			ran.Add(1)
			return "done", nil
		}))
		return tk
	}
	// A worker made the streams and the tool's consumer, and left.
	w0, _ := startDurableWorker(t, s, kit(), bus.WorkerOptions{Instance: "w0"}, 0, true)
	stopCtx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w0.Stop(stopCtx)

	c := newClient(t, natstest.Connect(t, s), nil)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "queued", Name: "effect", Durable: true}) }()
	js := natstest.JS(t, natstest.Connect(t, s))
	natstest.WaitFor(t, "the call queued", func() bool {
		st, err := js.Stream(ctxT(t), wire.StreamCalls)
		return err == nil && st.CachedInfo().State.Msgs == 1
	})
	if err := newClient(t, natstest.Connect(t, s), nil).Cancel("queued"); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the cancel recorded", func() bool {
		st, err := js.Stream(ctxT(t), wire.StreamCancels)
		return err == nil && st.CachedInfo().State.Msgs == 1
	})

	// The next worker's bind of the cancels stream waits until the call
	// was delivered to it.
	nc := natstest.Connect(t, s)
	gated := &gatedJetStream{JetStream: natstest.JS(t, nc), open: make(chan struct{}), asked: make(chan struct{})}
	served := make(chan *bus.Worker, 1)
	go func() {
		w, err := bus.Serve(nc, kit(), &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: gated}})
		if err != nil {
			t.Error(err)
		}
		served <- w
	}()
	<-gated.asked
	cons, err := js.Consumer(ctxT(t), wire.StreamCalls, "effect")
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call delivered while the cancels stream is bound", func() bool {
		info, err := cons.Info(ctxT(t))
		return err == nil && info.Delivered.Consumer >= 1
	})
	close(gated.open)
	w1 := <-served
	if w1 == nil {
		t.FailNow()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		w1.Stop(ctx)
	})
	if r := <-done; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("the call cancelled while queued: %s %s", r.Code, r.Text())
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the tool ran %d times, want none", n)
	}
}
