package toolkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// A deadline given a cause of its own (context.WithDeadlineCause) is
// still a deadline: the call ends timeout, not interrupted "by the
// user", whether it passed before the tool started or while it ran. A
// cancel with a cause stays interrupted.
func TestDeadlineWithCause(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("wait", "W.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		<-ctx.Done()
		return ctx.Err()
	}))
	cause := errors.New("the agent's budget ran out")
	for _, d := range []time.Duration{-time.Hour, time.Millisecond} {
		// Passed before the call, or (most likely) while the tool
		// waits: either way a deadline.
		ctx, cancel := context.WithTimeoutCause(context.Background(), d, cause)
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "wait"})
		cancel()
		if r.State != toolkit.StateError || r.Code != toolkit.CodeTimeout || r.Text() != toolkit.TimeoutText {
			t.Errorf("deadline %v: %s/%s %q, want error/timeout", d, r.State, r.Code, r.Text())
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "2", Name: "wait"}); r.Code != toolkit.CodeInterrupted {
		t.Errorf("cancelled with a cause: %s/%s %q, want interrupted", r.State, r.Code, r.Text())
	}
}
