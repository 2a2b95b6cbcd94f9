package bus

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTraceCallsAnsweredWithoutRunning: a call the worker answers without
// starting it (its cancel overtook it, its deadline had passed on
// arrival, its request was bad) is recorded as a span too, named and
// attributed as a call that ran is: "execute_tool <tool>" with
// error.type the final's code, the error status when it failed, in the
// caller's trace when the request carried one.
func TestTraceCallsAnsweredWithoutRunning(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec, tp := spanRecorder()
	w := serveEcho(t, s, WorkerOptions{Tracer: tp.Tracer("worker")})
	nc := natstest.Connect(t, s)

	// The caller's trace.
	parentCtx, parent := tp.Tracer("caller").Start(context.Background(), "caller")
	defer parent.End()
	traced := func(h nats.Header) nats.Header { return injectTrace(parentCtx, h) }

	raw := func(h nats.Header, data []byte) *toolkit.Response {
		t.Helper()
		return rawFinal(t, nc, wire.CallSubject("echo", ""), h, data)
	}
	call := func(id, session string, h nats.Header) *toolkit.Response {
		t.Helper()
		return raw(h, echoRequest(t, id, session))
	}

	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("", "t1"), "")); err != nil {
		t.Fatal(err)
	}
	keepsCancel(t, w, "t1")
	if r := call("t1", "s1", traced(nil)); r.Code != toolkit.CodeInterrupted {
		t.Fatalf("a call its cancel overtook: %+v", r)
	}
	if r := call("t2", "s2", traced(nats.Header{wire.HeaderTimeout: {"0"}})); r.Code != toolkit.CodeTimeout {
		t.Fatalf("a call past its deadline on arrival: %+v", r)
	}
	if r := raw(traced(nil), []byte{0xc1, 0x00, 0xff}); r.Code != toolkit.CodeInvalidInput {
		t.Fatalf("an undecodable request: %+v", r)
	}
	if r := call("t3", "", nats.Header{wire.HeaderTimeout: {"soon"}}); r.Code != toolkit.CodeInvalidInput {
		t.Fatalf("a bad timeout header: %+v", r)
	}
	if r := call("t4", "s4", traced(nil)); r.State != toolkit.StateSuccess {
		t.Fatalf("a plain call: %+v", r)
	}

	want := []struct {
		id, session string
		code        toolkit.Code
		traced      bool
	}{
		{"t1", "s1", toolkit.CodeInterrupted, true},
		{"t2", "s2", toolkit.CodeTimeout, true},
		{"", "", toolkit.CodeInvalidInput, true},
		{"t3", "", toolkit.CodeInvalidInput, false},
		{"t4", "s4", "", true},
	}
	var spans []sdktrace.ReadOnlySpan
	natstest.WaitFor(t, "a span for each call", func() bool {
		spans = rec.Ended()
		return len(spans) >= len(want)
	})
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %d", len(spans), len(want))
	}
	for i, wt := range want {
		sp := spans[i]
		attrs := map[attribute.Key]string{}
		for _, a := range sp.Attributes() {
			attrs[a.Key] = a.Value.Emit()
		}
		if sp.Name() != "execute_tool echo" || sp.SpanKind() != trace.SpanKindInternal {
			t.Errorf("call %q: span %q kind %v, want execute_tool echo, internal", wt.id, sp.Name(), sp.SpanKind())
		}
		if attrs["gen_ai.operation.name"] != "execute_tool" || attrs["gen_ai.tool.name"] != "echo" || attrs["gen_ai.tool.call.id"] != wt.id {
			t.Errorf("call %q: attributes %v", wt.id, attrs)
		}
		if attrs["toolbus.session"] != wt.session {
			t.Errorf("call %q: toolbus.session %q, want %q", wt.id, attrs["toolbus.session"], wt.session)
		}
		if attrs["error.type"] != string(wt.code) {
			t.Errorf("call %q: error.type %q, want %q", wt.id, attrs["error.type"], wt.code)
		}
		if failed := wt.code != "" && wt.code.State() == toolkit.StateError; failed != (sp.Status().Code == codes.Error) {
			t.Errorf("call %q: status %v", wt.id, sp.Status())
		}
		if got := sp.Parent().TraceID() == parent.SpanContext().TraceID() && sp.Parent().SpanID() == parent.SpanContext().SpanID(); got != wt.traced {
			t.Errorf("call %q: parent %v, want the caller's span: %v", wt.id, sp.Parent(), wt.traced)
		}
	}
}
