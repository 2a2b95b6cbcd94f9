package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestFinalCountedAsSent: a call whose output or final the worker could
// not send ends with an internal final, and that is what OnFinal (the
// worker's calls metric) and the call's span report, not the tool's own
// success or failure, which its caller never got.
func TestFinalCountedAsSent(t *testing.T) {
	partial := strings.Repeat("p", 40<<10)
	big := strings.Repeat("m", 400<<10)
	tools := []toolkit.Handler{
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"f": func() {}}})
		},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			w.Write(toolkit.Text(partial)) // streaming from here
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"f": make(chan int)}})
		},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return &toolkit.Error{Code: toolkit.CodeToolError, Message: "failed", Metadata: map[string]any{"a": big, "b": big, "c": big}}
		},
	}
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	for i, h := range tools {
		mustAdd(t, tk, toolkit.Raw(fmt.Sprint("t", i), "Fails to send.", nil, h))
	}
	type end struct {
		state toolkit.State
		code  toolkit.Code
	}
	var mu sync.Mutex
	finals := map[string]end{}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker"),
		OnFinal: func(tool string, state toolkit.State, code toolkit.Code, _ time.Duration) {
			mu.Lock()
			finals[tool] = end{state, code}
			mu.Unlock()
		}})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: guard})
	for i := range tools {
		name := fmt.Sprint("t", i)
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: name})
		if r.Code != toolkit.CodeInternal {
			t.Fatalf("%s: final = %s %s, want internal", name, r.State, r.Code)
		}
		mu.Lock()
		got := finals[name]
		mu.Unlock()
		if got != (end{toolkit.StateError, toolkit.CodeInternal}) {
			t.Errorf("%s: OnFinal heard %s %q; the caller got error internal", name, got.state, got.code)
		}
	}
	natstest.WaitFor(t, "every call's span ended", func() bool { return len(rec.Ended()) == len(tools) })
	for _, sp := range rec.Ended() {
		var typ string
		for _, a := range sp.Attributes() {
			if a.Key == "error.type" {
				typ = a.Value.Emit()
			}
		}
		if sp.Status().Code != codes.Error || typ != string(toolkit.CodeInternal) {
			t.Errorf("%s: span status %v, error.type %q; the caller got error internal", sp.Name(), sp.Status(), typ)
		}
	}
}
