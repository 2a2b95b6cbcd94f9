package bus_test

import (
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTraceOneSpanPerForwardedCall: a session-bound call that reaches a
// worker other than its session's is passed on and run there. README:
// "the worker records each call as a span"; a call must be one
// execute_tool span, not one per worker it passed through (trace-derived
// call counts and error rates would count every passed-on call twice, the
// extra span without the call's outcome).
// A call passed on to its session's worker was recorded as two
// execute_tool spans (one without an outcome on the worker that passed it
// on); the passing on is a route_tool span, the pinned worker's its child.
func TestTraceOneSpanPerForwardedCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	start := func(instance string) {
		tk := storeToolkit(t)
		nc := natstest.Connect(t, s)
		serve(t, nc, tk, &bus.WorkerOptions{Instance: instance, Tracer: tp.Tracer(instance),
			Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc)}})
	}
	start("w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: "s", Input: map[string]any{"value": "v"}}); r.Text() != "kept" {
		t.Fatalf("put: %+v", r)
	}
	start("w2") // the session stays pinned to w1
	forwarded := 0
	for i := range 20 {
		id := fmt.Sprint("get-", i)
		fresh := newClient(t, natstest.Connect(t, s), nil) // knows no pin: goes through the queue group
		ctx, parent := tp.Tracer("agent").Start(ctxT(t), "agent turn")
		r := fresh.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "get", Session: "s"})
		parent.End()
		fresh.Close()
		if r.Text() != "v" {
			t.Fatalf("get: %+v", r)
		}
		var exec, route []sdktrace.ReadOnlySpan
		for _, sp := range rec.Ended() {
			for _, a := range sp.Attributes() {
				if a.Key == "gen_ai.tool.call.id" && a.Value.AsString() == id {
					switch {
					case strings.HasPrefix(sp.Name(), "execute_tool "):
						exec = append(exec, sp)
					case strings.HasPrefix(sp.Name(), "route_tool "):
						route = append(route, sp)
					}
				}
			}
		}
		if len(exec) != 1 {
			t.Errorf("call %s was recorded as %d execute_tool spans, want 1", id, len(exec))
			continue
		}
		if len(route) > 0 {
			forwarded++
			if len(route) != 1 || exec[0].Parent().SpanID() != route[0].SpanContext().SpanID() {
				t.Errorf("call %s passed on: %d route_tool spans; the execute_tool span's parent %v, want the route_tool span", id, len(route), exec[0].Parent().SpanID())
			}
		}
	}
	if forwarded == 0 {
		t.Error("none of 20 calls through the queue group was passed on from w2 to w1")
	}
}
