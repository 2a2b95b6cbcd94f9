package toolkit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// toldWriter records what Dispatch told it of the call's tool: that it
// ran (RanWriter), or that it was not run (NotRunWriter).
type toldWriter struct {
	toolkit.WriterFuncs
	ran, notRun int
}

func (w *toldWriter) ToolRan()    { w.ran++ }
func (w *toldWriter) ToolNotRun() { w.notRun++ }

// TestToolRanChainOnAnotherGoroutine: a middleware may run the rest of
// the chain on goroutines of its own: waiting for it, running it twice
// at once (each run with a writer of its own, as a hedging middleware
// does), or leaving it running when it gives up (with a writer of its
// own, which it no longer reads). Dispatch's answer is true all the
// same, and is the last word: told that the tool ran if it was entered
// before the call ended, and the tool is not entered afterwards by a
// chain left running. (Run under -race: the chain's goroutines tell the
// dispatch what they did while it reads it.)
func TestToolRanChainOnAnotherGoroutine(t *testing.T) {
	gaveUp := toolkit.NewError(toolkit.CodeUnavailable, "gave up waiting")
	for _, c := range []struct {
		name string
		// mw is the middleware; wg counts the goroutines it leaves
		// running, release lets the ones that wait for it go on.
		mw func(wg *sync.WaitGroup, release <-chan struct{}) toolkit.Middleware
		// runs is how many times the tool runs, -1 for either 0 or 1.
		runs int
		code toolkit.Code
		ran  bool // told ToolRan; for runs -1, exactly when it ran
	}{
		{name: "waited for", mw: func(*sync.WaitGroup, <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					done := make(chan error, 1)
					go func() { done <- next(ctx, call, w) }()
					return <-done
				}
			}
		}, runs: 1, code: toolkit.CodeApprovalRequired, ran: true},
		{name: "run twice at once", mw: func(*sync.WaitGroup, <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					var wg sync.WaitGroup
					errs := make([]error, 2)
					for i := range errs {
						wg.Go(func() { errs[i] = next(ctx, call, toolkit.WriterFuncs{}) })
					}
					wg.Wait()
					return errs[0]
				}
			}
		}, runs: 2, code: toolkit.CodeApprovalRequired, ran: true},
		{name: "left running", mw: func(wg *sync.WaitGroup, _ <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					wg.Go(func() { _ = next(ctx, call, toolkit.WriterFuncs{}) })
					return gaveUp
				}
			}
		}, runs: -1, code: toolkit.CodeUnavailable},
		{name: "left running, the tool reached after the call ended", mw: func(wg *sync.WaitGroup, release <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					wg.Go(func() {
						<-release
						_ = next(ctx, call, toolkit.WriterFuncs{})
					})
					return gaveUp
				}
			}
		}, runs: 0, code: toolkit.CodeUnavailable},
		{name: "left running with an ended context", mw: func(wg *sync.WaitGroup, _ <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					ctx, cancel := context.WithCancelCause(ctx)
					cancel(toolkit.ErrDraining)
					wg.Go(func() { _ = next(ctx, call, toolkit.WriterFuncs{}) })
					return gaveUp
				}
			}
		}, runs: 0, code: toolkit.CodeUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			var wg sync.WaitGroup
			release := make(chan struct{})
			tk := toolkit.New(nil)
			tk.Use(c.mw(&wg, release))
			var runs atomic.Int32
			if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				runs.Add(1)
				return toolkit.NewError(toolkit.CodeApprovalRequired, "approve me")
			})); err != nil {
				t.Fatal(err)
			}
			w := &toldWriter{}
			r := tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "c", Name: "put"}, w)
			close(release)
			wg.Wait()
			n := int(runs.Load())
			if r.Code != c.code {
				t.Fatalf("the call ended %q (%q), want %q", r.Code, r.Text(), c.code)
			}
			if w.ran > 1 || w.notRun > 1 {
				t.Fatalf("told %d times that the tool ran, %d that it did not", w.ran, w.notRun)
			}
			switch {
			case c.runs >= 0 && n != c.runs:
				t.Fatalf("the tool ran %d times, want %d", n, c.runs)
			case c.runs < 0 && n > 1:
				t.Fatalf("the tool ran %d times, want at most once", n)
			case c.runs < 0 && (w.ran == 1) != (n == 1):
				t.Fatalf("told that the tool ran: %v; it ran %d times", w.ran == 1, n)
			case c.runs >= 0 && (w.ran == 1) != c.ran:
				t.Fatalf("told that the tool ran: %v (it ran %d times); want %v", w.ran == 1, n, c.ran)
			case w.notRun == 1 && n > 0:
				t.Fatalf("told that the tool was not run, and it ran %d times", n)
			}
		})
	}
}

// TestToolRanHandlerCalled: a middleware that runs the tool by its
// Handler (call.Tool.Handler), not by the chain's rest, ran it all the
// same: a RanWriter is told so, as when the chain's rest runs it. A
// middleware that leaves it running does not run it after Dispatch
// answered the call.
func TestToolRanHandlerCalled(t *testing.T) {
	for _, c := range []struct {
		name string
		mw   func(wg *sync.WaitGroup, release <-chan struct{}) toolkit.Middleware
		runs int
		code toolkit.Code
		ran  bool
	}{
		{name: "called", mw: func(*sync.WaitGroup, <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					return call.Tool.Handler(ctx, call, w)
				}
			}
		}, runs: 1, code: toolkit.CodeApprovalRequired, ran: true},
		{name: "called with a call built anew", mw: func(*sync.WaitGroup, <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					return call.Tool.Handler(context.WithValue(ctx, handOnKey{}, true), anew(call), w)
				}
			}
		}, runs: 1, code: toolkit.CodeApprovalRequired, ran: true},
		{name: "called after the call ended", mw: func(wg *sync.WaitGroup, release <-chan struct{}) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					wg.Go(func() {
						<-release
						_ = call.Tool.Handler(ctx, call, toolkit.WriterFuncs{})
					})
					return toolkit.NewError(toolkit.CodeUnavailable, "gave up waiting")
				}
			}
		}, runs: 0, code: toolkit.CodeUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			var wg sync.WaitGroup
			release := make(chan struct{})
			tk := toolkit.New(nil)
			tk.Use(c.mw(&wg, release))
			var runs atomic.Int32
			if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				runs.Add(1)
				return toolkit.NewError(toolkit.CodeApprovalRequired, "approve me")
			})); err != nil {
				t.Fatal(err)
			}
			w := &toldWriter{}
			r := tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "c", Name: "put"}, w)
			close(release)
			wg.Wait()
			n := int(runs.Load())
			if r.Code != c.code || n != c.runs {
				t.Fatalf("the call ended %q (%q), the tool ran %d times; want %q, %d", r.Code, r.Text(), n, c.code, c.runs)
			}
			if told := w.ran > 0; told != c.ran || w.ran > 1 {
				t.Fatalf("told %d times that the tool ran; want told: %v", w.ran, c.ran)
			}
		})
	}
}
