package toolkit_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// Tools and middleware that break the rules, and the contract that holds
// anyway: every call ends in exactly one final, the process keeps serving,
// and no goroutine outlives the call.

// checkGoroutines fails t when, once the test is done, more goroutines
// run than before it started. The count is retried while the scheduler
// finishes the ones that are ending.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		var now int
		for range 500 {
			if now = runtime.NumGoroutine(); now <= before {
				return
			}
			runtime.Gosched()
			time.Sleep(2 * time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the test, %d before:\n%s", now, before, buf[:runtime.Stack(buf, true)])
	})
}

// A panic in the consumer's loop body is the consumer's: it reaches the
// consumer as it was, not as a tool's panic or a runtime error about the
// iterator.
func TestHostileConsumerPanicPropagates(t *testing.T) {
	checkGoroutines(t)
	tk := newToolkit(t, nil)
	returned := false
	mustAdd(t, tk, toolkit.Raw("talk", "T.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		err := w.Write(toolkit.Text("one"))
		returned = true
		if err != nil {
			return err
		}
		return w.Write(toolkit.Text("two"))
	}))
	type consumerBug struct{ n int }
	for _, where := range []string{"chunk", "final"} {
		t.Run(where, func(t *testing.T) {
			returned = false
			got := func() (v any) {
				defer func() { v = recover() }()
				for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "1", Name: "talk"}) {
					if (where == "chunk" && ev.Chunk != nil) || (where == "final" && ev.Final != nil) {
						panic(consumerBug{7})
					}
				}
				return nil
			}()
			if b, ok := got.(consumerBug); !ok || b.n != 7 {
				t.Fatalf("the consumer's panic came back as %#v, want consumerBug{7}", got)
			}
			if where == "chunk" && returned {
				t.Errorf("the tool's Write returned after the consumer panicked: the tool kept running")
			}
		})
	}
}

// A function tool's result that JSON cannot encode is printed when it is
// a plain value (a func, a channel, NaN), and otherwise ends the call
// tool_error: printing a map that holds itself would overflow the stack.
func TestHostileResultNotJSON(t *testing.T) {
	checkGoroutines(t)
	cyclic := map[string]any{"f": func() {}} // JSON stops at the func first
	cyclic["self"] = cyclic
	tests := []struct {
		name  string
		out   any
		code  toolkit.Code
		state toolkit.State
	}{
		{"func", func() {}, "", toolkit.StateSuccess},
		{"chan", make(chan int), "", toolkit.StateSuccess},
		{"NaN", math.NaN(), "", toolkit.StateSuccess},
		{"cyclic map", cyclic, toolkit.CodeToolError, toolkit.StateError},
		{"slice of funcs", []any{func() {}}, toolkit.CodeToolError, toolkit.StateError},
	}
	tk := newToolkit(t, nil)
	for i, tt := range tests {
		name := "r" + string(rune('a'+i))
		mustAdd(t, tk, toolkit.Func(name, "R.", func(ctx context.Context, in struct{}) (any, error) { return tt.out, nil }))
		t.Run(tt.name, func(t *testing.T) {
			r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: name})
			if r.final.State != tt.state || r.final.Code != tt.code {
				t.Errorf("final = %s/%q %q, want %s/%q", r.final.State, r.final.Code, r.final.Text(), tt.state, tt.code)
			}
			if r.final.Text() == "" {
				t.Errorf("final has no text")
			}
		})
	}
}

// A tool that keeps its Writer and uses it after its call ended (from
// its own goroutine, in order with the end) gets ErrStopped from every
// method, and the caller hears nothing more; so does one whose caller
// stopped iterating, and one that ignores ErrStopped and goes on.
func TestHostileWriterAfterTheCall(t *testing.T) {
	checkGoroutines(t)
	tk := newToolkit(t, nil)
	kept := make(chan toolkit.Writer, 1)
	mustAdd(t, tk, toolkit.Raw("keep", "K.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		kept <- w
		return w.Write(toolkit.Text("once"))
	}))
	asked := 0
	ctx := toolkit.WithAsker(context.Background(), func(context.Context, string, any) (any, error) {
		asked++
		return "yes", nil
	})
	use := func(w toolkit.Writer) []error {
		_, aerr := toolkit.Ask(ctx, w, toolkit.MethodElicit, nil)
		return []error{
			w.Write(toolkit.Text("late")),
			w.Progress(toolkit.Progress{Progress: 1}),
			toolkit.Log(w, toolkit.LogMessage{Level: "info", Data: "late"}),
			aerr,
		}
	}
	check := func(t *testing.T, errs []error) {
		t.Helper()
		for i, err := range errs {
			if !errors.Is(err, toolkit.ErrStopped) {
				t.Errorf("method %d after the call: %v, want ErrStopped", i, err)
			}
		}
		if asked != 0 {
			t.Errorf("the caller was asked %d times after its call", asked)
		}
	}
	t.Run("Call", func(t *testing.T) {
		events := 0
		for range tk.Call(ctx, toolkit.ToolCall{ID: "1", Name: "keep"}) {
			events++
		}
		w := <-kept
		done := make(chan []error)
		go func() { done <- use(w) }()
		check(t, <-done)
		if events != 2 {
			t.Errorf("%d events, want the chunk and the final", events)
		}
	})
	t.Run("Invoke", func(t *testing.T) {
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "keep"})
		check(t, use(<-kept))
		if r.Text() != "once" {
			t.Errorf("final %q, want once", r.Text())
		}
	})
	t.Run("stopped iterating", func(t *testing.T) {
		var after []error
		mustAdd(t, tk, toolkit.Raw("deaf", "D.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			_ = w.Write(toolkit.Text("first"))
			for range 1000 {
				_ = w.Write(toolkit.Text("ignored"))
			}
			after = use(w)
			panic("and then it panics")
		}))
		events := 0
		for range tk.Call(ctx, toolkit.ToolCall{ID: "2", Name: "deaf"}) {
			events++
			break
		}
		check(t, after)
		if events != 1 {
			t.Errorf("%d events, want 1", events)
		}
	})
}

// Middleware that breaks the rules still leaves each call one final.
func TestHostileMiddleware(t *testing.T) {
	checkGoroutines(t)
	echo := func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("tool "))
	}
	late := make(chan func() error, 1)
	tests := []struct {
		name  string
		mw    toolkit.Middleware
		state toolkit.State
		code  toolkit.Code
		text  string
	}{
		{"next twice", func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if err := next(ctx, call, w); err != nil {
					return err
				}
				return next(ctx, call, w)
			}
		}, toolkit.StateSuccess, "", "tool tool "},
		{"never next", func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil }
		}, toolkit.StateSuccess, "", ""},
		{"panics after next", func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				_ = next(ctx, call, w)
				panic("middleware bug")
			}
		}, toolkit.StateError, toolkit.CodeInternal, "tool InternalError: the tool 'm' failed unexpectedly (panic: middleware bug)."},
		{"next after returning", func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				late <- func() error { return next(ctx, call, w) }
				return nil
			}
		}, toolkit.StateSuccess, "", ""},
		{"replaces the tool and the input", func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				call.Tool = nil
				call.Input = map[string]any{"other": make(chan int)}
				return next(ctx, call, w)
			}
		}, toolkit.StateSuccess, "", "tool "},
		{"nil writer", func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return next(ctx, call, nil) }
		}, toolkit.StateError, toolkit.CodeInternal, "InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			tk.Use(tt.mw)
			mustAdd(t, tk, toolkit.Raw("m", "M.", nil, echo))
			r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "m"})
			if r.final.State != tt.state || r.final.Code != tt.code || !strings.HasPrefix(r.final.Text(), tt.text) {
				t.Errorf("final = %s/%q %q, want %s/%q %q…", r.final.State, r.final.Code, r.final.Text(), tt.state, tt.code, tt.text)
			}
			select {
			case f := <-late: // the tool runs after its call ended
				done := make(chan error)
				go func() { done <- f() }()
				if err := <-done; !errors.Is(err, toolkit.ErrStopped) {
					t.Errorf("the tool's write after the call: %v, want ErrStopped", err)
				}
			default:
			}
		})
	}
}

// A tool that ignores its context holds Invoke (and Call) until it
// returns: the tool runs on the caller's goroutine, so nothing is left
// running, and the call ends timeout when the tool returns an error
// after the deadline.
func TestHostileIgnoresDeadline(t *testing.T) {
	checkGoroutines(t)
	tk := newToolkit(t, nil)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	mustAdd(t, tk, toolkit.Raw("stubborn", "S.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		started <- struct{}{}
		_ = w.Write(toolkit.Text("partial "))
		<-release
		return errors.New("done at last")
	}))
	// The deadline must pass while the tool runs: on a busy machine one
	// of a millisecond passes before it starts (answered timeout without
	// running it), so it is longer each time that happens.
	var ctx context.Context
	var got chan *toolkit.Response
	for d := time.Millisecond; ; d *= 10 {
		c, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		ctx, got = c, make(chan *toolkit.Response, 1)
		go func() { got <- tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "stubborn"}) }()
		select {
		case <-started:
		case r := <-got:
			if r.Code == toolkit.CodeTimeout && d < time.Minute {
				continue // the deadline passed before the tool started
			}
			t.Fatalf("Invoke returned %+v before its tool started", r)
		}
		break
	}
	<-ctx.Done()
	select {
	case r := <-got:
		t.Fatalf("Invoke returned %+v while its tool still ran", r)
	default:
	}
	close(release)
	r := <-got
	if r.Code != toolkit.CodeTimeout || r.Text() != "partial "+toolkit.TimeoutText {
		t.Errorf("final = %s %q, want timeout with the partial output", r.Code, r.Text())
	}
}
