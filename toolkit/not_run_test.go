package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// notRunWriter records whether Dispatch told it the tool was not run.
type notRunWriter struct {
	toolkit.WriterFuncs
	told int
}

func (w *notRunWriter) ToolNotRun() { w.told++ }

// TestToolNotRun: a Writer that is a NotRunWriter is told when the
// call's context ended before its tool was entered, its middleware
// having run (a transport may then send the call elsewhere: it did not
// start), and only then: not for a call whose tool ran, also once
// before its context ended (a middleware that runs it again), nor for
// a call refused before its middleware.
func TestToolNotRun(t *testing.T) {
	type how struct {
		name string
		ctx  func() context.Context // the call's; Background when nil
		mw   toolkit.Middleware
		call string // the tool called
		told bool
		code toolkit.Code
	}
	cancelled := func() context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(toolkit.ErrDraining)
		return ctx
	}
	cancelFirst := func(pass func(*toolkit.Call) *toolkit.Call) toolkit.Middleware {
		return func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				ctx, cancel := context.WithCancelCause(ctx)
				cancel(toolkit.ErrDraining)
				return next(ctx, pass(call), w)
			}
		}
	}
	pass := func(next toolkit.Handler) toolkit.Handler { return next }
	for _, c := range []how{
		{name: "ran", mw: pass, call: "put", code: ""},
		{name: "ended before the chain", ctx: cancelled, mw: pass, call: "put", told: true, code: toolkit.CodeInterrupted},
		{name: "ended in the middleware", mw: cancelFirst(same), call: "put", told: true, code: toolkit.CodeInterrupted},
		{name: "ended in the middleware, a copy of the call passed on", mw: cancelFirst(copied), call: "put", told: true, code: toolkit.CodeInterrupted},
		{name: "ended in the middleware, a call built anew passed on", mw: cancelFirst(anew), call: "put", told: true, code: toolkit.CodeInterrupted},
		{name: "ran, then ended and skipped", mw: func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				ctx, cancel := context.WithCancelCause(ctx)
				defer cancel(nil)
				if err := next(ctx, call, w); err != nil {
					return err
				}
				cancel(toolkit.ErrDraining)
				return next(ctx, call, w)
			}
		}, call: "put", code: toolkit.CodeInterrupted},
		{name: "not found", ctx: cancelled, mw: pass, call: "nothing", code: toolkit.CodeNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := toolkit.New(nil)
			tk.Use(c.mw)
			runs := 0
			if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				runs++
				return w.Write(toolkit.Text("put"))
			})); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if c.ctx != nil {
				ctx = c.ctx()
			}
			w := &notRunWriter{}
			r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "c", Name: c.call}, w)
			if r.Code != c.code {
				t.Fatalf("the call ended %q (%q), want %q", r.Code, r.Text(), c.code)
			}
			if told := w.told > 0; told != c.told || w.told > 1 {
				t.Fatalf("told %d times that the tool was not run (it ran %d times); want told: %v", w.told, runs, c.told)
			}
			if c.told && runs > 0 {
				t.Fatalf("told that the tool was not run, and it ran %d times", runs)
			}
		})
	}
}

// What a middleware hands its next handler: the Call it was given, a
// copy of it with another input, or one built anew with that input.
func same(call *toolkit.Call) *toolkit.Call { return call }

func copied(call *toolkit.Call) *toolkit.Call {
	c := *call
	c.Input = map[string]any{"changed": true}
	return &c
}

func anew(call *toolkit.Call) *toolkit.Call {
	tc := call.ToolCall
	tc.Input = map[string]any{"changed": true}
	return &toolkit.Call{ToolCall: tc, Tool: call.Tool}
}

// ranWriter records whether Dispatch told it the tool was entered.
type ranWriter struct {
	toolkit.WriterFuncs
	told int
}

func (w *ranWriter) ToolRan() { w.told++ }

// handOnKey marks the context a middleware hands on: one of its own,
// derived from the one it was given.
type handOnKey struct{}

// TestToolRan: a Writer that is a RanWriter is told when the call's tool
// was entered and the call did not succeed, also when the tool itself
// ended it with a code a middleware answers without running it
// (approval_required), so a transport can tell the two apart; not when a
// middleware answered so without running the tool, nor for a call that
// succeeded. A middleware may hand the tool a Call and context of its
// own (a copy of the call or one built anew, a context derived from its
// own): the tool ran all the same.
func TestToolRan(t *testing.T) {
	ask := func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return toolkit.NewError(toolkit.CodeApprovalRequired, "approve first")
		}
	}
	pass := func(next toolkit.Handler) toolkit.Handler { return next }
	handOn := func(pass func(*toolkit.Call) *toolkit.Call) toolkit.Middleware {
		return func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return next(context.WithValue(ctx, handOnKey{}, true), pass(call), w)
			}
		}
	}
	for _, c := range []struct {
		name string
		mw   toolkit.Middleware
		tool error // what the tool returns
		runs int
		told bool
		code toolkit.Code
	}{
		{name: "succeeded", mw: pass, runs: 1},
		{name: "the tool asked", mw: pass, tool: toolkit.NewError(toolkit.CodeApprovalRequired, "approve me"), runs: 1, told: true, code: toolkit.CodeApprovalRequired},
		{name: "the middleware asked", mw: ask, code: toolkit.CodeApprovalRequired},
		{name: "the tool asked, given a copy of the call", mw: handOn(copied), tool: toolkit.NewError(toolkit.CodeApprovalRequired, "approve me"), runs: 1, told: true, code: toolkit.CodeApprovalRequired},
		{name: "the tool asked, given a call built anew", mw: handOn(anew), tool: toolkit.NewError(toolkit.CodeApprovalRequired, "approve me"), runs: 1, told: true, code: toolkit.CodeApprovalRequired},
		{name: "succeeded, given a call built anew", mw: handOn(anew), runs: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := toolkit.New(nil)
			tk.Use(c.mw)
			runs := 0
			if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				runs++
				return c.tool
			})); err != nil {
				t.Fatal(err)
			}
			w := &ranWriter{}
			r := tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "c", Name: "put"}, w)
			if r.Code != c.code || runs != c.runs {
				t.Fatalf("the call ended %q (%q), the tool ran %d times; want %q, %d", r.Code, r.Text(), runs, c.code, c.runs)
			}
			if told := w.told > 0; told != c.told || w.told > 1 {
				t.Fatalf("told %d times that the tool ran; want told: %v", w.told, c.told)
			}
		})
	}
}
