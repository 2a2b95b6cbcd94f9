package bus_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSpanOfHugePanicIsBounded: a tool that panics with a 1 MiB message
// (a panic quoting what it was given, say) had the whole of it on its
// span, as the exception event's exception.message: every such span
// held 1 MiB in the exporter's queue, which holds thousands of spans.
// It is cut to callspan.MaxMessage bytes now, as the status description
// is.
func TestSpanOfHugePanicIsBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tk := toolkit.New(nil)
	huge := strings.Repeat("é", 512<<10) // 1 MiB, two bytes a rune
	mustAdd(t, tk, toolkit.Func("huge_panic", "Panics at length.", func(ctx context.Context, in struct{}) (string, error) {
		panic(huge)
	}))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker")})
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "huge_panic"}); r.Code != toolkit.CodeInternal {
		t.Fatalf("huge_panic: %s %s", r.State, r.Code)
	}
	natstest.WaitFor(t, "the call's span", func() bool { return len(rec.Ended()) > 0 })
	sp := rec.Ended()[0]
	if d := sp.Status().Description; len(d) > callspan.MaxMessage {
		t.Errorf("status description: %d bytes, want at most %d", len(d), callspan.MaxMessage)
	}
	var found bool
	for _, ev := range sp.Events() {
		for _, a := range ev.Attributes {
			if a.Key != "exception.message" {
				continue
			}
			found = true
			if m := a.Value.AsString(); len(m) > callspan.MaxMessage || !strings.HasPrefix(huge, m) || m == "" {
				t.Errorf("exception.message: %d bytes (a prefix of the panic at a rune's start: %v), want 1 to %d", len(m), strings.HasPrefix(huge, m), callspan.MaxMessage)
			}
		}
	}
	if !found {
		t.Errorf("no exception.message among %v", sp.Events())
	}
}
