package bus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopReconnectedLeavesQueueGroup: of two workers serving a tool, one
// stops while cut off from NATS (its client reconnecting), and its
// connection comes back before the stop looks at it again after draining
// its subscriptions. nats.go sends no UNSUB for a drain while
// reconnecting, makes every subscription it still holds again on the
// server when the connection is back, draining ones included, then ends
// the drains on its side only: the server kept the stopped worker in the
// tool's queue group, and the calls the group handed it were dropped
// unseen (each caller waiting for its timeout), though the other worker
// could run them. A stop that finds its worker not connected now ends
// its subscriptions without draining them, so they are not made again,
// and every call is answered by the other worker.
func TestStopReconnectedLeavesQueueGroup(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	anc := px.Conn(t)
	a := serve(t, anc, ranOn(t, "a", "echo"), &WorkerOptions{Instance: "a", AnnounceInterval: -1})
	serve(t, natstest.Connect(t, s), ranOn(t, "b", "echo"), &WorkerOptions{Instance: "b", AnnounceInterval: -1})
	if err := anc.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	px.Cut()
	natstest.WaitFor(t, "a's connection lost", func() bool { return anc.Status() == nats.RECONNECTING })
	// The connection comes back, and nats.go ends the subscriptions
	// drained while it was down, before the stop goes on.
	a.afterDrains = func() {
		px.Restore()
		natstest.WaitFor(t, "a's connection back", anc.IsConnected)
		natstest.WaitFor(t, "a's call subscriptions ended", func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, subs := range a.subs {
				for _, sub := range subs {
					if sub.IsValid() {
						return false
					}
				}
			}
			return true
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Guard)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := anc.Flush(); err != nil {
		t.Fatal(err)
	}

	allRunOnB(t, c, "a's stop")
}

// ranOn is a toolkit of the tools named, each answering "ran on
// instance".
func ranOn(t *testing.T, instance string, names ...string) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(nil)
	for _, name := range names {
		if err := tk.Add(toolkit.Raw(name, "Echoes.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text("ran on " + instance))
		})); err != nil {
			t.Fatal(err)
		}
	}
	return tk
}

// allRunOnB fails unless echo calls through the queue group all run on
// worker b: none is handed to a (the group picks at random; 20 calls all
// reach b only if a left).
func allRunOnB(t *testing.T, c *Client, after string) {
	t.Helper()
	for i := range 20 {
		call, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := c.Invoke(call, toolkit.ToolCall{ID: fmt.Sprintf("after-%d", i), Name: "echo"})
		cancel()
		if r.State != toolkit.StateSuccess || r.Text() != "ran on b" {
			t.Fatalf("call %d after %s: %s %s: %q", i, after, r.State, r.Code, r.Text())
		}
	}
}
