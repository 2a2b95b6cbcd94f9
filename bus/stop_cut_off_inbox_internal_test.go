package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopCutOffInboxAnsweredInterrupted: a worker cut off from NATS
// whose grace ends with no call running but a call taken from its inbox
// and not yet run answers that call interrupted (it was passed on once
// already: it goes no further). Stop returned nil, as for a stop that cut
// nothing short, and cmd/worker logged nothing of it. Stop now returns
// an error wrapping the grace's, saying how many calls it answered
// interrupted without running them.
func TestStopCutOffInboxAnsweredInterrupted(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echoes.", func(context.Context, struct{}) (string, error) { return "ran", nil })); err != nil {
		t.Fatal(err)
	}
	wnc := px.Conn(t)
	w := serve(t, wnc, tk, &WorkerOptions{Instance: "w", AnnounceInterval: -1})
	// The reader that takes the call holds it until the stop's grace is
	// over, as a reader starved of CPU would.
	taken := make(chan struct{})
	w.beforeAccept = func(m *nats.Msg) {
		close(taken)
		natstest.WaitFor(t, "the grace over", func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.interrupting
		})
	}

	// The call, as a stopping worker passes it on to the tool's group.
	nc := natstest.Connect(t, s)
	inbox := wire.Inbox("") + "held"
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	h := nats.Header{wire.HeaderUnserved: {"w0"}, wire.HeaderReply: {inbox}}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: nats.NewInbox(), Header: h, Data: data}); err != nil {
		t.Fatal(err)
	}
	<-taken
	px.Cut()
	natstest.WaitFor(t, "the worker's connection lost", func() bool { return wnc.Status() == nats.RECONNECTING })

	grace, over := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(grace) }()
	natstest.WaitFor(t, "the stop under way, cut off", func() bool { return w.stopCutOff.Load() })
	over()
	var stopErr error
	select {
	case stopErr = <-stopped:
	case <-time.After(natstest.Guard):
		t.Fatal("Stop did not return")
	}
	if stopErr == nil || !strings.Contains(stopErr.Error(), "1 call taken and not run was answered interrupted") {
		t.Errorf("Stop of a worker cut off, its grace over with a call taken and not run: %v", stopErr)
	}

	// Connected again, its final reaches the caller: interrupted.
	px.Restore()
	m, err := sub.NextMsg(natstest.Guard)
	if err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Kind != wire.KindFinal || f.Final.Code != toolkit.CodeInterrupted {
		t.Fatalf("the call's answer: %+v", f)
	}
}
