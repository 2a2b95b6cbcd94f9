package bus_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestUnservedDropsForwarded: a call forwarded to its session's worker a
// (Toolbus-Forwarded), which no longer serves the tool, is passed on to
// the tool's queue group without that header: the worker taking it (b)
// reads the session pinned to a third live worker (d) and forwards it
// there, rather than answer it unavailable as a forwarded call whose
// session moved.
func TestUnservedDropsForwarded(t *testing.T) {
	s := natstest.Embedded(t, false)
	ncA := natstest.Connect(t, s)
	jsA := natstest.JS(t, ncA)
	serve(t, ncA, toolkit.New(nil), &bus.WorkerOptions{Instance: "a", Sessions: &bus.SessionsOptions{JetStream: jsA}})
	var ran atomic.Int64
	tkB := toolkit.New(nil)
	mustAdd(t, tkB, putTool(&ran), toolkit.SessionBound())
	ncB := natstest.Connect(t, s)
	serve(t, ncB, tkB, &bus.WorkerOptions{Instance: "b", Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, ncB)}})

	kv, err := jsA.KeyValue(ctxT(t), wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	key, err := wire.SessionKey(toolkit.SessionScope("", "s"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctxT(t), key, []byte("d")); err != nil {
		t.Fatal(err)
	}
	// d is live (it answers its probes) and runs the session: the calls
	// passed to it are kept here.
	ncD := natstest.Connect(t, s)
	if _, err := ncD.Subscribe(wire.SubjectPinnedPrefix+"d", func(m *nats.Msg) { m.Respond(nil) }); err != nil {
		t.Fatal(err)
	}
	atD, err := ncD.SubscribeSync(wire.PinnedSubject("d", "put", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := ncD.Flush(); err != nil {
		t.Fatal(err)
	}

	// The call as worker x forwarded it to a, the session's worker then.
	nc := natstest.Connect(t, s)
	inbox, err := nc.SubscribeSync(nats.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "c1", Input: map[string]any{"value": "1"}, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.PinnedSubject("a", "put", ""), Reply: inbox.Subject, Header: nats.Header{wire.HeaderForwarded: {"x"}}, Data: data}); err != nil {
		t.Fatal(err)
	}
	got := make(chan *nats.Msg, 1)
	go func() {
		if m, err := atD.NextMsg(guard); err == nil {
			got <- m
		}
	}()
	answered := make(chan *wire.Frame, 1)
	go func() {
		for {
			m, err := inbox.NextMsg(guard)
			if err != nil {
				return
			}
			var f wire.Frame
			if wire.Msgpack.Unmarshal(m.Data, &f) == nil && f.Final != nil {
				answered <- &f
				return
			}
		}
	}()
	select {
	case m := <-got:
		if m.Header.Get(wire.HeaderForwarded) != "b" || m.Reply != inbox.Subject {
			t.Fatalf("the call reached d forwarded by %q, reply %q; want b, %q", m.Header.Get(wire.HeaderForwarded), m.Reply, inbox.Subject)
		}
	case f := <-answered:
		t.Fatalf("the call passed on by a was answered, not forwarded to d, the session's worker: %s %s %q (worker %v)", f.Final.State, f.Final.Code, f.Final.Text(), f.Final.Metadata[wire.MetaWorker])
	case <-time.After(guard):
		t.Fatal("the call reached neither d nor its caller")
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("put ran %d times on b, away from the session's worker", n)
	}
}
