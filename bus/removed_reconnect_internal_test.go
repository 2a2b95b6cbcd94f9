package bus

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestToolRemovedWhileReconnectingLeavesQueueGroup: of two workers
// serving a tool, one has it removed from its toolkit while its client
// is reconnecting. The worker drained the tool's subscriptions, and
// nats.go sends no UNSUB for a drain while reconnecting, makes every
// subscription it holds again on the server once the connection is
// back, draining ones included, then ends the drains on its side only:
// the server kept the worker in the tool's queue group for as long as
// its connection lived, and the calls the group handed it were dropped
// unseen (each caller ending worker_lost), though the other worker could
// run them. A tool removed while not connected now has its
// subscriptions ended at once, so they are not made again.
func TestToolRemovedWhileReconnectingLeavesQueueGroup(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	anc := px.Conn(t)
	atk := ranOn(t, "a", "echo", "keep")
	a := serve(t, anc, atk, &WorkerOptions{Instance: "a", AnnounceInterval: -1})
	serve(t, natstest.Connect(t, s), ranOn(t, "b", "echo", "keep"), &WorkerOptions{Instance: "b", AnnounceInterval: -1})
	if err := anc.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	a.mu.Lock()
	echo := a.subs["echo"]
	a.mu.Unlock()
	px.Cut()
	natstest.WaitFor(t, "a's connection lost", func() bool { return anc.Status() == nats.RECONNECTING })
	atk.Remove("echo")
	px.Restore()
	natstest.WaitFor(t, "a's connection back", anc.IsConnected)
	natstest.WaitFor(t, "a's echo subscriptions ended", func() bool {
		return !echo[0].IsValid() && !echo[1].IsValid()
	})
	if err := anc.Flush(); err != nil {
		t.Fatal(err)
	}

	allRunOnB(t, c, "echo left a")
}
