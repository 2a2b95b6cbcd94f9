package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A call interrupted because its worker was shut down (cause ErrDraining,
// a stop past its grace period) told the model it had been interrupted
// by the user: AgentScope's text for a user's interrupt, which the model
// takes as the user's wish to stop. It now says the worker serving it shut
// down; a caller's cancel, with or without a cause, keeps AgentScope's
// text word for word.
func TestInterruptSaysWhoInterrupted(t *testing.T) {
	for _, c := range []struct {
		name  string
		cause error // nil: a plain cancel
		user  bool  // AgentScope's user interrupt
	}{
		{"plain cancel", nil, true},
		{"caller cancelled", toolkit.ErrCallerCancelled, true},
		{"worker stopped", toolkit.ErrDraining, false},
		{"worker stopped, wrapped", errors.Join(errors.New("stopping"), toolkit.ErrDraining), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(what, text string) {
				t.Helper()
				if c.user {
					if text != toolkit.InterruptedText {
						t.Errorf("%s: %q, want AgentScope's %q", what, text, toolkit.InterruptedText)
					}
					return
				}
				if strings.Contains(text, "by the user") || !strings.Contains(text, "worker") || !strings.Contains(text, "shut down") {
					t.Errorf("%s: %q, want it to say the worker serving the call shut down, not the user", what, text)
				}
			}

			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(c.cause)
			e := toolkit.ContextError(ctx)
			if e.Code != toolkit.CodeInterrupted {
				t.Errorf("ContextError code %s, want interrupted", e.Code)
			}
			check("ContextError", e.Message)

			// A call whose tool was running: its partial output, then the notice.
			tk := newToolkit(t, nil)
			started := make(chan struct{})
			mustAdd(t, tk, toolkit.Stream("block", "Blocks.", func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
				if err := w.Write(toolkit.Text("partial")); err != nil {
					return err
				}
				close(started)
				<-ctx.Done()
				return ctx.Err()
			}))
			ctx, cancel = context.WithCancelCause(context.Background())
			go func() {
				<-started
				cancel(c.cause)
			}()
			r := collect(t, tk, ctx, toolkit.ToolCall{ID: "c1", Name: "block"})
			if r.final.State != toolkit.StateInterrupted || r.final.Code != toolkit.CodeInterrupted {
				t.Fatalf("final %s (%s), want interrupted", r.final.State, r.final.Code)
			}
			text, ok := strings.CutPrefix(r.final.Text(), "partial")
			if !ok {
				t.Fatalf("final text %q lost the partial output", r.final.Text())
			}
			check("the final's notice", text)

			// A call its middleware held until the interrupt, its tool
			// not yet run: the toolkit skips the tool (an interrupted
			// *Error) and the notice is the same.
			tk = newToolkit(t, nil)
			held := make(chan struct{})
			tk.Use(func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					if err := w.Write(toolkit.Text("held")); err != nil {
						return err
					}
					close(held)
					<-ctx.Done()
					return next(ctx, call, w)
				}
			})
			mustAdd(t, tk, toolkit.Func("echo", "Echoes.", func(context.Context, struct{}) (string, error) { return "ran", nil }))
			ctx, cancel = context.WithCancelCause(context.Background())
			go func() {
				<-held
				cancel(c.cause)
			}()
			r = collect(t, tk, ctx, toolkit.ToolCall{ID: "c2", Name: "echo"})
			if r.final.Code != toolkit.CodeInterrupted {
				t.Fatalf("held call: final %s (%s), want interrupted", r.final.State, r.final.Code)
			}
			if text, ok = strings.CutPrefix(r.final.Text(), "held"); !ok {
				t.Fatalf("held call: final text %q lost the middleware's output", r.final.Text())
			}
			check("the held call's notice", text)
		})
	}
}
