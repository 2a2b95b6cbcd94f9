package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// nested is a value n maps deep.
func nested(n int) map[string]any {
	v := map[string]any{"leaf": true}
	for range n - 1 {
		v = map[string]any{"x": v}
	}
	return v
}

// empties is n empty objects: a few thousand decode to more than the
// body's budget.
func empties(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{}
	}
	return out
}

// A tool's output that the caller's decoder refuses (nested deeper than
// it takes, or decoding to more than its budget) was published all the
// same: the caller dropped the frame as undecodable, waited for its stall
// timeout and took the worker for lost, and a read-only tool ran again
// for each attempt; a chunk was lost and the call succeeded without it.
// The worker now answers such a call internal at once, and the tool runs
// once.
func TestOutputUnreadable(t *testing.T) {
	s := natstest.Embedded(t, false)
	for _, tc := range []struct {
		name   string
		stream bool // a chunk sent on its own, not held for the final
		value  any
	}{
		{"deep, in the final", false, nested(70)},
		{"deep, in a chunk", true, nested(70)},
		{"inflating, in the final", false, empties(5000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			tk := toolkit.New(nil)
			mustAdd(t, tk, toolkit.Stream("deep", "Answer with unreadable metadata.",
				func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
					runs.Add(1)
					if tc.stream {
						if err := w.Write(toolkit.Text("first")); err != nil {
							return err
						}
						time.Sleep(300 * time.Millisecond) // past the hold: the next chunk goes alone
					}
					c := toolkit.Text("out")
					c.Metadata = map[string]any{"v": tc.value}
					return w.Write(c)
				}), toolkit.ReadOnly())
			serve(t, natstest.Connect(t, s), tk, nil)
			c := newClient(t, natstest.Connect(t, s), nil)
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "deep", Input: map[string]any{}})
			if r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "its reader would refuse it") {
				t.Errorf("final %s %s: %q", r.State, r.Code, r.Text())
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the tool ran %d times", n)
			}
		})
	}
}

// An answer the worker's decoder would refuse was not sent at all (the
// client only logged it): the tool waited for its answer until its
// deadline. The tool now hears at once that the answer could not be sent.
func TestAnswerUnreadable(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, askTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Asker: func(context.Context, string, any) (any, error) {
		return map[string]any{"action": "accept", "content": nested(70)}, nil
	}})
	// Only hearing why the answer was not sent ends the tool's wait
	// before the test's guard does (the call then ends timeout).
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "greet"})
	if !strings.Contains(r.Text(), "no answer: ") || !strings.Contains(r.Text(), "its reader would refuse it") {
		t.Errorf("the tool never heard that its answer could not be sent: final %s %s: %q", r.State, r.Code, r.Text())
	}
}

// cyclicPanicker's msgpack encoder panics with a map that holds itself.
type cyclicPanicker struct{}

func (cyclicPanicker) EncodeMsgpack(*msgpack.Encoder) error {
	m := map[string]any{}
	m["self"] = m
	panic(m)
}

// A value whose encoder panicked was caught, then printed with %v: a
// panic value that holds itself is printed until the stack overflows, a
// crash no recover catches, and the worker died.
func TestEncoderPanicWithCyclicValue(t *testing.T) {
	s := natstest.Embedded(t, true)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("cyclic", "Answer with metadata whose encoder panics.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			c := toolkit.Text("out")
			c.Metadata = map[string]any{"v": cyclicPanicker{}}
			return w.Write(c)
		}))
	wnc := natstest.Connect(t, s)
	serve(t, wnc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, wnc)}})
	c := newClient(t, natstest.Connect(t, s), nil)
	for _, keep := range []bool{false, true} { // a kept final is encoded for the results bucket too
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "cyclic", Input: map[string]any{}, KeepResult: keep})
		if r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "panicked") {
			t.Errorf("keep %v: final %s %s: %q", keep, r.State, r.Code, r.Text())
		}
	}
}
