package bus

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForwardWaitingForInputMemoryArrived: a call passed on to a after a
// answered its probe waits for input memory there. It has come: a stop
// of a does not wait for it (forwardWait) before draining
// tools.pinned.a.>.
func TestForwardWaitingForInputMemoryArrived(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("put"))
	}), toolkit.SessionBound()); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, s)
	a := serve(t, nc, tk, &WorkerOptions{Instance: "a", MaxInputMemory: 1 << 20, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
	// The input memory is taken, until the test ends.
	held, _ := a.inputs.tryAcquire(1 << 20)
	t.Cleanup(func() { a.inputs.release(held) })

	other := natstest.Connect(t, s)
	inbox := wire.Inbox("") + "forwarded"
	sub, err := other.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	// The probe, as another worker makes it before passing the call on.
	if _, err := other.Request(wire.SubjectPinnedPrefix+"a", []byte(inbox), natstest.Guard); err != nil {
		t.Fatal(err)
	}
	data, err := wire.JSON.Marshal(&wire.Request{ID: "f", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := nats.Header{wire.HeaderForwarded: {"c"}, "Content-Type": {"application/json"}}
	if err := other.PublishMsg(&nats.Msg{Subject: wire.PinnedSubject("a", "put", ""), Reply: inbox, Header: h, Data: data}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call to wait for input memory", func() bool { return a.memWaiting.Load() == 1 })
	a.aff.mu.Lock()
	_, waited := a.aff.expected[inbox]
	a.aff.mu.Unlock()
	if waited {
		t.Fatal("a stop waits for the call that came and waits for input memory")
	}
}
