package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tk := toolkit.New(nil)
	echo := toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	if err := tk.Add(echo); err != nil {
		t.Fatal(err)
	}
	w, err := Serve(natstest.Connect(t, s), tk, &WorkerOptions{AnnounceInterval: -1, Tracer: tp.Tracer("worker")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	nc := natstest.Connect(t, s)

	// The caller's trace.
	parentCtx, parent := tp.Tracer("caller").Start(context.Background(), "caller")
	defer parent.End()
	traced := func(h nats.Header) nats.Header { return injectTrace(parentCtx, h) }

	raw := func(h nats.Header, data []byte) *toolkit.Response {
		t.Helper()
		m, err := nc.RequestMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Header: h, Data: data}, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil || f.Final == nil {
			t.Fatalf("%v %+v", err, f)
		}
		return f.Final
	}
	call := func(id, session string, h nats.Header) *toolkit.Response {
		t.Helper()
		data, err := wire.Msgpack.Marshal(&wire.Request{ID: id, Session: session, Input: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		return raw(h, data)
	}

	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("", "t1"), "")); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the worker to keep the cancel", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, ok := w.tombs[callKey("", "t1")]
		return ok
	})
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
