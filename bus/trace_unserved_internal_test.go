package bus

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTraceCallOfRemovedToolPassedOn: a call whose tool was removed from
// worker a after a took it is passed on to the tool's queue group and run
// by worker b. As a call passed on to its session's worker is, it must be
// one execute_tool span (b's), the child of a route_tool span on a: a
// recorded it as a second execute_tool span, without an outcome, beside
// b's rather than above it (trace-derived call counts counted it twice).
func TestTraceCallOfRemovedToolPassedOn(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	echo := func() *toolkit.Tool {
		return toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		})
	}
	tkA, tkB := toolkit.New(nil), toolkit.New(nil)
	for _, tk := range []*toolkit.Toolkit{tkA, tkB} {
		if err := tk.Add(echo()); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Serve(natstest.Connect(t, s), tkA, &WorkerOptions{Instance: "a", Tracer: tp.Tracer("a")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	var once sync.Once
	met := make(chan string, 1) // the id of the call that met the removal
	a.beforeDispatch = func(s *sender) {
		once.Do(func() { met <- s.id; tkA.Remove(s.call.Name) })
	}
	b, err := Serve(natstest.Connect(t, s), tkB, &WorkerOptions{Instance: "b", Tracer: tp.Tracer("b")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop(context.Background()) })
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var passed string
	for i := 0; passed == ""; i++ {
		if i > 1000 {
			t.Fatal("no call reached worker a")
		}
		ctx, parent := tp.Tracer("agent").Start(t.Context(), "agent turn")
		id := "c" + strconv.Itoa(i)
		r := c.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "echo", Input: map[string]any{"text": id}})
		parent.End()
		if r.State != toolkit.StateSuccess {
			t.Fatalf("call %s: %s %s %q", id, r.State, r.Code, r.Text())
		}
		select {
		case passed = <-met:
		default:
		}
	}
	// a ends its span just after it passed the call on: the caller may
	// have b's final a moment before.
	var exec, route []sdktrace.ReadOnlySpan
	spans := func() bool {
		exec, route = nil, nil
		for _, sp := range rec.Ended() {
			for _, kv := range sp.Attributes() {
				if kv.Key == "gen_ai.tool.call.id" && kv.Value.AsString() == passed {
					switch {
					case strings.HasPrefix(sp.Name(), "execute_tool "):
						exec = append(exec, sp)
					case strings.HasPrefix(sp.Name(), "route_tool "):
						route = append(route, sp)
					}
				}
			}
		}
		return len(exec) == 1 && len(route) == 1
	}
	for deadline := time.Now().Add(guardWait); !spans(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the call passed on from a to b: %d execute_tool and %d route_tool spans, want 1 and 1", len(exec), len(route))
		}
	}
	if exec[0].Parent().SpanID() != route[0].SpanContext().SpanID() {
		t.Errorf("b's execute_tool span's parent is %v, want a's route_tool span %v", exec[0].Parent().SpanID(), route[0].SpanContext().SpanID())
	}
}
