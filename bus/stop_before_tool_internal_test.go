package bus

import (
	"context"
	"sync"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopPastGraceBeforeToolPassesOn: a call whose dispatch began (its
// middleware ran) but whose tool was not yet entered when its worker's
// grace ran out was answered interrupted, though it had not run and
// another worker served its tool: the toolkit skips the tool of a call
// whose context ended, and the worker answered what the toolkit gave.
// It is passed on now, as a call the worker took and had not started,
// unless its caller heard some of its output (the middleware's) from
// the stopping worker: another worker's would follow it. The stopping
// worker's middleware holds the call until the stop cancels it, so the
// tool is reached only past the grace.
func TestStopPastGraceBeforeToolPassesOn(t *testing.T) {
	for _, c := range []struct {
		name     string
		streamed bool // the middleware sends a chunk first
		want     string
	}{
		{name: "passed on", want: "put on stays"},
		{name: "output heard", streamed: true, want: "held" + toolkit.DrainedText},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			var mu sync.Mutex
			ranOn := map[string]string{} // call id: the worker its tool ran on
			newToolkit := func(instance string, mw ...toolkit.Middleware) *toolkit.Toolkit {
				tk := toolkit.New(nil)
				tk.Use(mw...)
				if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					mu.Lock()
					ranOn[call.ID] = instance
					mu.Unlock()
					return w.Write(toolkit.Text("put on " + instance))
				})); err != nil {
					t.Fatal(err)
				}
				return tk
			}
			hold := func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					if c.streamed {
						if err := w.Write(toolkit.Text("held")); err != nil {
							return err
						}
					} else if err := w.Progress(toolkit.Progress{Message: "held"}); err != nil {
						return err
					}
					<-ctx.Done() // the stop, past its grace
					return next(ctx, call, w)
				}
			}
			stopping := serve(t, natstest.Connect(t, s), newToolkit("stopping", hold), &WorkerOptions{Instance: "stopping", AnnounceInterval: -1})
			cl, err := NewClient(natstest.Connect(t, s), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cl.Close() })
			held := make(chan struct{})
			answer := make(chan *toolkit.Response, 1)
			go func() {
				var heard sync.Once
				var acc toolkit.Accumulator
				for ev := range cl.Call(natstest.Ctx(t), toolkit.ToolCall{ID: "held", Name: "put"}) {
					if ev.Progress != nil || ev.Chunk != nil {
						heard.Do(func() { close(held) })
					}
					if ev.Chunk != nil {
						acc.Add(ev.Chunk)
					}
					if ev.Final != nil {
						r := ev.Final
						if len(r.Content) == 0 { // streamed: the chunks carry it
							r.Content = acc.Response(r.ID).Content
						}
						answer <- r
					}
				}
			}()
			<-held // heard by the caller: the middleware holds the call
			serve(t, natstest.Connect(t, s), newToolkit("stays"), &WorkerOptions{Instance: "stays", AnnounceInterval: -1})
			over, cancel := context.WithCancel(context.Background())
			cancel()
			stopping.Stop(over)
			r := <-answer
			mu.Lock()
			on := ranOn["held"]
			mu.Unlock()
			if got := r.Text(); got != c.want {
				t.Fatalf("the call ended %q with %q, its tool run on %q; want %q", r.Code, got, on, c.want)
			}
		})
	}
}
