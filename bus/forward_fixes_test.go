package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A session-bound call reaches w2 while its session is pinned to w1, whose
// answer to the probe is slow (w1's connection is paused). The call's
// deadline passes meanwhile; w2's clock abandons it and sends the caller
// its timeout final. When w1 answered the probe, w2 still passed the call
// on: w1 ran the tool after the caller was told the call timed out and
// sent a second final, and w2 released the call's input memory twice.
func TestAbandonedWhileRoutingIsNotForwarded(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	var ran atomic.Int32 // "put" calls run, on either worker
	mk := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		schema := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}
		if err := tk.Add(toolkit.Raw("put", "Keep a value.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			ran.Add(1)
			return w.Write(toolkit.Text("kept"))
		}), toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	start := func(nc *nats.Conn, instance string) *Worker {
		w := serve(t, nc, mk(), &WorkerOptions{Instance: instance, AbandonAfter: 50 * time.Millisecond,
			Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc), ProbeTimeout: 20 * time.Second}})
		return w
	}
	start(px.Conn(t), "w1")
	w2 := start(natstest.Connect(t, s), "w2")
	nc := natstest.Connect(t, s)

	call := func(subject, id string, hdr nats.Header) *nats.Subscription {
		inbox := nats.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
		hdr.Set(wire.HeaderContentType, wire.ContentTypeJSON)
		body, _ := json.Marshal(map[string]any{"id": id, "session": "s", "input": map[string]any{"value": id}})
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: inbox, Header: hdr, Data: body}); err != nil {
			t.Fatal(err)
		}
		return sub
	}
	final := func(sub *nats.Subscription, wait time.Duration) *wire.Frame {
		end := time.Now().Add(wait)
		for {
			m, err := sub.NextMsg(time.Until(end))
			if err != nil {
				return nil
			}
			var f wire.Frame
			if err := wire.JSON.Unmarshal(m.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Kind == wire.KindFinal {
				return &f
			}
		}
	}
	// w1 claims session s.
	if f := final(call(wire.PinnedSubject("w1", "put", ""), "claim", nats.Header{}), natstest.Guard); f == nil || f.Final.Metadata[wire.MetaSessionWorker] != "w1" {
		t.Fatalf("claim: %+v", f)
	}
	ran.Store(0)

	px.Pause()
	sub := call(wire.PinnedSubject("w2", "put", ""), "late", nats.Header{wire.HeaderTimeout: {"200"}})
	f := final(sub, natstest.Guard)
	if f == nil || f.Final.Code != toolkit.CodeTimeout {
		px.Resume()
		t.Fatalf("first final %+v, want timeout", f)
	}
	t.Logf("caller got final %s (seq %d)", f.Final.Code, f.Seq)
	px.Resume() // w1 answers w2's probe now

	if f2 := final(sub, 5*time.Second); f2 != nil {
		t.Errorf("a second final after the timeout final: %s %q (worker %v)", f2.Final.Code, f2.Final.Text(), f2.Final.Metadata[wire.MetaWorker])
	}
	if n := ran.Load(); n > 0 {
		t.Errorf("the tool ran %d time(s) after its caller got the timeout final", n)
	}
	w2.inputs.mu.Lock()
	left, size := w2.inputs.left, w2.inputs.size
	w2.inputs.mu.Unlock()
	if left > size {
		t.Errorf("w2's input budget has %d bytes left of %d: the call's memory was released twice", left, size)
	}
}

// Toolbus-Timeout is relative, "measured when the caller publishes". A
// worker that passed a call on to its session's worker after a slow probe
// copied the caller's header as it was, so the pinned worker's deadline
// started again: the call got the routing time on top of what its caller
// allowed.
func TestForwardKeepsWhatIsLeftOfTheTimeout(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	mk := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Raw("put", "Keep a value.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text("kept"))
		}), toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	start := func(nc *nats.Conn, instance string) {
		serve(t, nc, mk(), &WorkerOptions{Instance: instance,
			Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc), ProbeTimeout: 20 * time.Second}})
	}
	start(px.Conn(t), "w1")
	start(natstest.Connect(t, s), "w2")
	nc := natstest.Connect(t, s)
	// Watches what reaches w1's own subjects.
	watch, err := nc.SubscribeSync(wire.SubjectPinnedPrefix + "w1.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	send := func(subject, id string, hdr nats.Header) (reply string) {
		hdr.Set(wire.HeaderContentType, wire.ContentTypeJSON)
		body, _ := json.Marshal(map[string]any{"id": id, "session": "s", "input": map[string]any{}})
		reply = nats.NewInbox()
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Header: hdr, Data: body}); err != nil {
			t.Fatal(err)
		}
		return reply
	}
	// w1 claims session s.
	send(wire.PinnedSubject("w1", "put", ""), "claim", nats.Header{})
	if _, err := watch.NextMsg(natstest.Guard); err != nil { // the claim itself
		t.Fatal(err)
	}
	natstest.WaitFor(t, "session s pinned to w1", func() bool {
		kv, err := natstest.JS(t, nc).KeyValue(context.Background(), wire.BucketSessions)
		if err != nil {
			return false
		}
		key, _ := wire.SessionKey(toolkit.SessionScope("", "s"))
		e, err := kv.Get(context.Background(), key)
		return err == nil && string(e.Value()) == "w1"
	})

	// w2's probes of w1, which the test sees as w1 would.
	probes, err := nc.SubscribeSync(wire.SubjectPinnedPrefix + "w1")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	const allowed = 10_000 // ms
	px.Pause()
	reply := send(wire.PinnedSubject("w2", "put", ""), "fwd", nats.Header{wire.HeaderTimeout: {"10000"}})
	// w2 took the call, and set its deadline, before it probed w1 for it.
	for {
		m, err := probes.NextMsg(natstest.Guard)
		if err != nil {
			t.Fatalf("w2 never probed w1 for the call: %v", err)
		}
		if string(m.Data) == reply {
			break
		}
	}
	probed := time.Now()
	time.Sleep(2 * time.Second) // w2 waits for w1's answer to its probe
	resumed := time.Now()
	px.Resume() // w1 answers now: w2 passes the call on after this
	m, err := watch.NextMsg(natstest.Guard)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Header.Get(wire.HeaderTimeout)
	t.Logf("forwarded %s after %s with %s: %q", m.Subject, time.Since(probed).Round(time.Millisecond), wire.HeaderTimeout, got)
	var ms int64
	if _, err := fmt.Sscan(got, &ms); err != nil {
		t.Fatalf("forwarded timeout %q: %v", got, err)
	}
	// At least resumed-probed of the call's time went before it was passed
	// on, however slow the machine: only a worker that does not count it
	// allows more.
	if gone := resumed.Sub(probed); ms > allowed-gone.Milliseconds() {
		t.Fatalf("the call was passed on with %d ms of the %d its caller allowed, though %s had gone by then: the pinned worker's deadline is past the caller's",
			ms, allowed, gone.Round(time.Millisecond))
	}
}
