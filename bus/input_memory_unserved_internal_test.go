package bus

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCallWaitingForInputMemoryPassedOn: a call that waited for input
// memory and whose tool was removed meanwhile is passed on numbered after
// the heartbeats its caller heard, with what is left of its timeout. It
// was passed on as if it had just come: the next worker numbered its
// frames from 1, which the caller dropped as old, and ran it with its
// whole timeout again.
func TestCallWaitingForInputMemoryPassedOn(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started, free := addHold(t, tk)
	ran := make(chan struct{}, 1)
	other := func(context.Context, struct {
		Text string `json:"text"`
	}) (int, error) {
		ran <- struct{}{}
		return 0, nil
	}
	if err := tk.Add(toolkit.Func("other", "Answers at once.", other)); err != nil {
		t.Fatal(err)
	}
	serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w", MaxInputMemory: 4 << 20})
	first := holdHalf(t, s, started)

	// Ten heartbeats of 50 ms outlast the timeout of 300 ms.
	h := nats.Header{wire.HeaderHeartbeat: {"50"}, wire.HeaderTimeout: {"300"}}
	next := callWaiting(t, s, "other", h)
	var seq uint64
	for seq < 10 {
		f := next()
		if f.Kind != wire.KindHeartbeat || f.Seq != seq+1 {
			t.Fatalf("frame %d while waiting: %s seq %d %+v", seq+1, f.Kind, f.Seq, f.Final)
		}
		seq = f.Seq
	}
	// Another worker serves the tool, which this one no longer does.
	tk2 := toolkit.New(nil)
	if err := tk2.Add(toolkit.Func("other", "Answers at once.", other)); err != nil {
		t.Fatal(err)
	}
	serve(t, natstest.Connect(t, s), tk2, &WorkerOptions{Instance: "w2"})
	tk.Remove("other")
	free()
	for {
		f := next()
		if f.Seq <= seq {
			t.Fatalf("%s frame numbered %d after the %d heartbeats the caller heard", f.Kind, f.Seq, seq)
		}
		seq = f.Seq
		if f.Kind == wire.KindFinal {
			if f.Final.Code != toolkit.CodeTimeout {
				t.Fatalf("the call that waited past its timeout: %s %s %q", f.Final.State, f.Final.Code, f.Final.Text())
			}
			break
		}
	}
	if r := <-first; r.State != toolkit.StateSuccess {
		t.Fatalf("first call: %s %s %q", r.State, r.Code, r.Text())
	}
	select {
	case <-ran:
		t.Fatal("the call that waited past its timeout ran")
	default:
	}
}

// TestCallWaitingForInputMemoryNotServed: a call that waited for input
// memory, whose tool was removed meanwhile and that no other worker
// serves, ends not_found numbered right after the heartbeats its caller
// heard.
func TestCallWaitingForInputMemoryNotServed(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started, free := addHold(t, tk)
	if err := tk.Add(toolkit.Func("other", "Answers at once.", func(context.Context, struct {
		Text string `json:"text"`
	}) (int, error) {
		return 0, nil
	})); err != nil {
		t.Fatal(err)
	}
	serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w", MaxInputMemory: 4 << 20})
	first := holdHalf(t, s, started)
	next := callWaiting(t, s, "other", nats.Header{wire.HeaderHeartbeat: {"50"}})
	var seq uint64
	for seq < 3 {
		f := next()
		if f.Kind != wire.KindHeartbeat || f.Seq != seq+1 {
			t.Fatalf("frame %d while waiting: %s seq %d", seq+1, f.Kind, f.Seq)
		}
		seq = f.Seq
	}
	tk.Remove("other")
	free()
	for {
		f := next()
		if f.Seq != seq+1 {
			t.Fatalf("%s frame numbered %d after %d", f.Kind, f.Seq, seq)
		}
		seq = f.Seq
		if f.Kind == wire.KindFinal {
			if f.Final.Code != toolkit.CodeNotFound {
				t.Fatalf("the call of a tool no worker serves: %s %s %q", f.Final.State, f.Final.Code, f.Final.Text())
			}
			break
		}
	}
	if r := <-first; r.State != toolkit.StateSuccess {
		t.Fatalf("first call: %s %s %q", r.State, r.Code, r.Text())
	}
}
