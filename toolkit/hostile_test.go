package toolkit_test

import (
	"context"
	"runtime"
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
