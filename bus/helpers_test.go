package bus_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// hole has the first call of tool taken, on nc, by a subscriber in the
// default queue group that never answers (a worker lost with the call),
// which then leaves and runs up (nil: nothing), say to bring the tool's
// worker up in its place. The channel is closed once it took the call.
func hole(t testing.TB, nc *nats.Conn, tool string, up func()) <-chan struct{} {
	t.Helper()
	taken := make(chan struct{})
	var once sync.Once
	sub, err := nc.QueueSubscribe(wire.CallSubject(tool, ""), bus.DefaultQueue, func(*nats.Msg) { once.Do(func() { close(taken) }) })
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	go func() {
		<-taken
		sub.Unsubscribe()
		if up != nil {
			up()
		}
	}()
	return taken
}

// guard bounds waits so a broken bus fails instead of hanging; it asserts
// nothing about speed.
const guard = 30 * time.Second

func serve(t testing.TB, nc *nats.Conn, tk *toolkit.Toolkit, opts *bus.WorkerOptions) *bus.Worker {
	t.Helper()
	w, err := bus.Serve(nc, tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		w.Stop(ctx)
	})
	return w
}

func newClient(t testing.TB, nc *nats.Conn, opts *bus.ClientOptions) *bus.Client {
	t.Helper()
	c, err := bus.NewClient(nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

type echoIn struct {
	Text string `json:"text"`
}

func echoTool() *toolkit.Tool {
	return toolkit.Func("echo", "Echo the text back.",
		func(ctx context.Context, in echoIn) (string, error) { return in.Text, nil })
}

func mustAdd(t testing.TB, tk *toolkit.Toolkit, tool *toolkit.Tool, opts ...toolkit.Option) {
	t.Helper()
	if err := tk.Add(tool, opts...); err != nil {
		t.Fatal(err)
	}
}

// threeTool writes a, b and c, waiting on release before b (the
// caller's link is cut meanwhile: loseFrames) and before c (it is back),
// and closing wrote once b is written.
func threeTool() (tool *toolkit.Tool, release chan struct{}, wrote chan struct{}) {
	wrote, release = make(chan struct{}), make(chan struct{})
	return toolkit.Stream("three", "Writes a, b and c.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		w.Write(toolkit.Text("a"))
		<-release
		w.Write(toolkit.Text("b"))
		close(wrote)
		<-release
		return w.Write(toolkit.Text("c"))
	}), release, wrote
}

// loseFrames cuts the caller's link (nc, through px) while its tool
// writes: the tool is released to write once the client noticed the
// break (wrote says it did, into nobody's subscription), the link comes
// back and the client's inbox is on the server again, and the tool is
// released to go on.
func loseFrames(t *testing.T, px *natstest.Proxy, nc *nats.Conn, release chan<- struct{}, wrote <-chan struct{}) {
	t.Helper()
	px.Cut()
	natstest.WaitFor(t, "the client to notice the break", func() bool { return !nc.IsConnected() })
	release <- struct{}{}
	<-wrote
	px.Restore()
	natstest.WaitFor(t, "the client to reconnect", nc.IsConnected)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	release <- struct{}{}
}

// answeringReadOnly announces a read-only tool called name on s (a
// toolkit's announcer) and takes its calls on a plain NATS subscription
// of the worker's queue group, answering each with the final answer
// makes of the call's id, as a worker of another build could. It returns
// the count of calls taken.
func answeringReadOnly(t *testing.T, s *embedded.Server, name string, answer func(id string) *toolkit.Response) *atomic.Int32 {
	t.Helper()
	return standIn(t, s, name, func(id string) []*wire.Frame {
		return []*wire.Frame{{Kind: wire.KindFinal, ID: id, Seq: 1, Final: answer(id)}}
	}, toolkit.ReadOnly())
}

// standIn announces a tool called name, added with opts, on s (a
// toolkit's announcer) and takes its calls on a plain NATS subscription
// of the worker's queue group, as a worker of another build could: it
// publishes the frames frames makes of each call's id on the call's reply
// subject, in their order (and then nothing: a final left out is a worker
// lost). It returns the count of calls taken.
func standIn(t *testing.T, s *embedded.Server, name string, frames func(id string) []*wire.Frame, opts ...toolkit.Option) *atomic.Int32 {
	t.Helper()
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func(name, "Stands in.", func(context.Context, struct{}) (string, error) { return "", nil }), opts...)
	a, err := discovery.NewAnnouncer(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	nc := natstest.Connect(t, s)
	calls := new(atomic.Int32)
	if _, err := nc.QueueSubscribe(wire.CallSubject(name, ""), bus.DefaultQueue, func(m *nats.Msg) {
		calls.Add(1)
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		for i, f := range frames(req.ID) {
			data, err := wire.Msgpack.Marshal(f)
			if err != nil {
				t.Error(i, err)
				return
			}
			if err := nc.Publish(m.Reply, data); err != nil {
				t.Error(i, err)
				return
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return calls
}
