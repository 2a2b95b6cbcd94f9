package middleware_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// waits writes "partial", then waits for its context and reports what it
// saw: whether it had a deadline and the context's cause.
func waits(seen chan<- string) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text("partial")); err != nil {
			return err
		}
		<-ctx.Done()
		seen <- fmt.Sprint(context.Cause(ctx))
		return fmt.Errorf("stopped: %w", ctx.Err())
	}
}

// deadline reports whether the tool's context has a deadline, and finishes.
func deadline(seen chan<- bool) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		_, ok := ctx.Deadline()
		seen <- ok
		return w.Write(toolkit.Text("done"))
	}
}

func TestTimeout(t *testing.T) {
	ctx := context.Background()
	causes := make(chan string, 1)
	hasDeadline := make(chan bool, 1)
	mw := middleware.Timeout{
		// Long enough for the tool to start (a call past its deadline
		// before its tool starts does not run it), short for a test.
		Default: 300 * time.Millisecond,
		PerTool: map[string]time.Duration{"slow_ok": time.Hour, "exempt": 0},
	}.Middleware()
	tk := newToolkit(t, mw)
	mustAdd(t, tk, raw("blocks", waits(causes)))
	mustAdd(t, tk, raw("slow_ok", deadline(hasDeadline)))
	mustAdd(t, tk, raw("exempt", deadline(hasDeadline)))

	// The default deadline passes: code timeout, partial output kept.
	chunks, final := run(t, tk, ctx, toolkit.ToolCall{Name: "blocks"})
	if final.State != toolkit.StateError || final.Code != toolkit.CodeTimeout {
		t.Errorf("final = %s/%s", final.State, final.Code)
	}
	if !strings.HasPrefix(final.Text(), "partialTimeoutError: The tool call exceeded its 300ms deadline") {
		t.Errorf("text = %q", final.Text())
	}
	if len(chunks) != 2 || chunks[1].State != toolkit.StateError {
		t.Errorf("chunks = %+v", chunks)
	}
	if cause := <-causes; cause != middleware.ErrTimeout.Error() {
		t.Errorf("the tool saw cause %q, want ErrTimeout", cause)
	}

	// A per-tool override.
	if _, final := run(t, tk, ctx, toolkit.ToolCall{Name: "slow_ok"}); final.State != toolkit.StateSuccess || !<-hasDeadline {
		t.Errorf("slow_ok: %+v", final)
	}
	// Zero exempts.
	if _, final := run(t, tk, ctx, toolkit.ToolCall{Name: "exempt"}); final.State != toolkit.StateSuccess || <-hasDeadline {
		t.Errorf("exempt: %+v (or it had a deadline)", final)
	}

	// The caller's cancel stays an interrupt.
	cctx, cancel := context.WithCancel(ctx)
	tk2 := newToolkit(t, middleware.Timeout{Default: time.Hour}.Middleware())
	started := make(chan struct{})
	mustAdd(t, tk2, raw("blocks", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}))
	go func() { <-started; cancel() }()
	if _, final := run(t, tk2, cctx, toolkit.ToolCall{Name: "blocks"}); final.Code != toolkit.CodeInterrupted || final.Text() != toolkit.InterruptedText {
		t.Errorf("caller cancel: %s %q", final.Code, final.Text())
	}

	// A tool that succeeds although its deadline passed keeps its success.
	tk3 := newToolkit(t, middleware.Timeout{Default: 50 * time.Millisecond}.Middleware())
	mustAdd(t, tk3, raw("stubborn", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		<-ctx.Done()
		return w.Write(toolkit.Text("finished anyway"))
	}))
	if _, final := run(t, tk3, ctx, toolkit.ToolCall{Name: "stubborn"}); final.State != toolkit.StateSuccess && final.Code != toolkit.CodeTimeout {
		// (A timeout: the deadline passed before the tool started, on a
		// busy machine, so it did not run.)
		t.Errorf("stubborn: %+v", final)
	}

	// The zero value adds no deadline; changing the config afterwards
	// changes nothing.
	cfg := middleware.Timeout{PerTool: map[string]time.Duration{}}
	tk4 := newToolkit(t, cfg.Middleware())
	cfg.PerTool["exempt"] = time.Nanosecond
	mustAdd(t, tk4, raw("exempt", deadline(hasDeadline)))
	if _, final := run(t, tk4, ctx, toolkit.ToolCall{Name: "exempt"}); final.State != toolkit.StateSuccess || <-hasDeadline {
		t.Errorf("zero value: %+v (or it had a deadline)", final)
	}
}

// The caller's shorter deadline wins and is reported as the caller's
// timeout.
func TestTimeoutNeverExtends(t *testing.T) {
	causes := make(chan string, 1)
	tk := newToolkit(t, middleware.Timeout{Default: time.Hour}.Middleware())
	mustAdd(t, tk, raw("blocks", waits(causes)))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, final := run(t, tk, ctx, toolkit.ToolCall{Name: "blocks"})
	if final.Code != toolkit.CodeTimeout {
		t.Errorf("code = %s", final.Code)
	}
	select {
	case cause := <-causes:
		if cause != context.DeadlineExceeded.Error() {
			t.Errorf("cause = %q, want the caller's deadline", cause)
		}
	default: // the deadline passed before the tool started (a busy machine): it did not run
	}
}

// A negative deadline was silently no deadline at all: Middleware now
// refuses it, naming the field, as a registration mistake.
func TestTimeoutRefusesNegative(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  middleware.Timeout
		want string
	}{
		{"default", middleware.Timeout{Default: -time.Second}, "Timeout.Default"},
		{"per tool", middleware.Timeout{Default: time.Second, PerTool: map[string]time.Duration{"slow": -time.Minute}}, `Timeout.PerTool["slow"]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				v := recover()
				if msg := fmt.Sprint(v); v == nil || !strings.Contains(msg, tt.want) || !strings.Contains(msg, "negative") {
					t.Errorf("Middleware() panicked with %v, want a message naming %s as negative", v, tt.want)
				}
			}()
			tt.cfg.Middleware()
		})
	}
}
