package middleware_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// An inner middleware (or the tool) that changed the input map in place,
// rather than handing on a new one, changed what the next attempt got:
// each retry saw the changes of every attempt before it ("x+", "x++",
// "x+++"). Each attempt now gets the input the first one got.
func TestRetryRestoresInputChangedInPlace(t *testing.T) {
	var c counter
	var seen []string
	mutate := func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			call.Input["text"] = call.Input["text"].(string) + "+"
			return next(ctx, call, w)
		}
	}
	var s sleeps
	tk := newToolkit(t, middleware.Retry{Sleep: s.sleep}.Middleware(), mutate)
	mustAdd(t, tk, toolkit.Stream("echo", "E.", func(ctx context.Context, in textIn, w toolkit.Writer) error {
		seen = append(seen, in.Text)
		if c.inc() < 3 {
			return toolkit.NewError(toolkit.CodeUnavailable, "down")
		}
		return w.Write(toolkit.Text(in.Text))
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	_, final := run(t, tk, context.Background(), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}})
	if final.Text() != "x+" || fmt.Sprint(seen) != "[x+ x+ x+]" {
		t.Errorf("final %q, inputs seen %v", final.Text(), seen)
	}
}

// Retry copied the input before every attempt, the last one too, which
// no attempt follows to need the input as it came. Every attempt but the
// last gets a copy; the last gets the input Retry was handed, so a call
// retried to its last attempt, and every call with MaxAttempts 1, costs
// a map less.
func TestRetryLastAttemptTakesInput(t *testing.T) {
	for _, attempts := range []int{1, 2, 3} {
		var handed, last any
		var copies []any
		outer := func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				handed = reflect.ValueOf(call.Input).UnsafePointer()
				return next(ctx, call, w)
			}
		}
		inner := func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				copies = append(copies, reflect.ValueOf(call.Input).UnsafePointer())
				return next(ctx, call, w)
			}
		}
		var s sleeps
		tk := newToolkit(t, outer, middleware.Retry{MaxAttempts: attempts, Sleep: s.sleep}.Middleware(), inner)
		mustAdd(t, tk, toolkit.Raw("down", "D.", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error {
			return toolkit.NewError(toolkit.CodeUnavailable, "down")
		}), toolkit.WithIdempotency(toolkit.Idempotent))
		run(t, tk, context.Background(), toolkit.ToolCall{Name: "down", Input: map[string]any{"text": "x"}})
		if len(copies) != attempts {
			t.Fatalf("MaxAttempts %d: %d attempts", attempts, len(copies))
		}
		copies, last = copies[:attempts-1], copies[attempts-1]
		if last != handed {
			t.Errorf("MaxAttempts %d: the last attempt got a copy of the input, want the map Retry was handed", attempts)
		}
		if slices.Contains(copies, handed) {
			t.Errorf("MaxAttempts %d: an attempt before the last got the map Retry was handed, want a copy", attempts)
		}
	}
}
