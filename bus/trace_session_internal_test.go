package bus

import (
	"testing"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRefusedSpanCarriesSession: a call the worker answers without
// running it, once its request is read far enough to name its session,
// has that session on its span (toolbus.session), as a call that ran
// has: a bad request (a bad header, a call id already running), a call
// passed on to a queue group nobody subscribes to (passedBack), a
// durable-by-default call already queued under its id. Those spans had
// no session.
func TestRefusedSpanCarriesSession(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec, tp := spanRecorder()
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	serveEcho(t, s, WorkerOptions{Instance: "w", Tracer: tp.Tracer("worker"), Sessions: &SessionsOptions{JetStream: js},
		Durable: &DurableOptions{JetStream: js, Tools: []string{"echo"}}})

	if r := rawFinal(t, nc, wire.CallSubject("echo", ""), nats.Header{wire.HeaderTimeout: {"soon"}}, echoRequest(t, "b1", "s-bad")); r.Code != toolkit.CodeInvalidInput {
		t.Fatalf("a bad timeout header: %+v", r)
	}
	// Passed on to the queue group of a tool nobody serves: the
	// no-responders status comes back, and the worker answers not_found.
	if r := rawFinal(t, nc, wire.PinnedSubject("w", "nobody", ""), nil, echoRequest(t, "p1", "s-passed")); r.Code != toolkit.CodeNotFound {
		t.Fatalf("a call of a tool nobody serves: %+v", r)
	}
	// Queued once (its frames go to an inbox nobody reads), then sent
	// again under its id: answered as a duplicate.
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: nc.NewInbox(), Data: echoRequest(t, "d1", "s-dup")}); err != nil {
		t.Fatal(err)
	}
	var dup *toolkit.Response
	natstest.WaitFor(t, "the first d1 queued", func() bool {
		sub, err := nc.SubscribeSync(nc.NewInbox())
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: sub.Subject, Data: echoRequest(t, "d1", "s-dup")}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := sub.NextMsg(guardWait)
			if err != nil {
				t.Fatal(err)
			}
			var f wire.Frame
			if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Final != nil {
				dup = f.Final
				return dup.Code == toolkit.CodeInvalidInput
			}
		}
	})

	want := map[string]string{"b1": "s-bad", "p1": "s-passed"}
	natstest.WaitFor(t, "the spans of b1, p1 and the duplicate d1", func() bool {
		n := 0
		for _, sp := range rec.Ended() {
			if a := spanAttrs(sp); want[a["gen_ai.tool.call.id"]] != "" || a["gen_ai.tool.call.id"] == "d1" && a["error.type"] == "invalid_input" {
				n++
			}
		}
		return n >= 3
	})
	want["d1"] = "s-dup"
	for _, sp := range rec.Ended() {
		a := spanAttrs(sp)
		id := a["gen_ai.tool.call.id"]
		if id == "d1" && a["error.type"] != "invalid_input" {
			continue // the call that ran
		}
		if w, ok := want[id]; ok && a["toolbus.session"] != w {
			t.Errorf("the span of %s (%s): toolbus.session %q, want %q", id, a["error.type"], a["toolbus.session"], w)
		}
	}
}

// spanAttrs are a span's attributes as text, by key.
func spanAttrs(sp sdktrace.ReadOnlySpan) map[string]string {
	attrs := map[string]string{}
	for _, a := range sp.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	return attrs
}
