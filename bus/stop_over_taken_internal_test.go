package bus

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopPastGraceRunsNoCallTakenBefore: a worker stopped with its
// grace over at once holds a core call it took just before the stop and
// has not run yet. The call does not run there, as none it takes from
// then on does: it is passed on to its tool's queue group, and another
// worker runs it. It ran there before, the stop cancelling it only once
// its pull loops had ended, well after the call had run.
func TestStopPastGraceRunsNoCallTakenBefore(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	var ran [2]atomic.Int32
	tools := func(i int) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Func("echo", "Echoes.", func(ctx context.Context, in struct{}) (string, error) {
			ran[i].Add(1)
			return "echo", nil
		})); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	// Durable calls too: its stop waits for its pull loops.
	w1 := serve(t, natstest.Connect(t, s), tools(0), &WorkerOptions{Instance: "w1", AnnounceInterval: -1, Durable: &DurableOptions{JetStream: js}})
	taken := make(chan struct{})
	var once sync.Once
	w1.afterAccept = func(*sender) {
		once.Do(func() {
			close(taken)
			// Goes on once the stop interrupts what it takes.
			deadline := time.Now().Add(natstest.Guard)
			for time.Now().Before(deadline) {
				w1.mu.Lock()
				on := w1.interrupting
				w1.mu.Unlock()
				if on {
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := natstest.Ctx(t)
	result := make(chan *toolkit.Response, 1)
	go func() { result <- c.Invoke(ctx, toolkit.ToolCall{ID: "e1", Name: "echo"}) }()
	<-taken
	serve(t, natstest.Connect(t, s), tools(1), &WorkerOptions{Instance: "w2", AnnounceInterval: -1})
	over, cancel := context.WithCancel(context.Background())
	cancel()
	go w1.Stop(over)
	r := <-result
	if r.Text() != "echo" || ran[0].Load() != 0 || ran[1].Load() != 1 {
		t.Fatalf("a call taken before a stop past its grace: %s %q; ran on the stopping worker %d times, on the other %d", r.Code, r.Text(), ran[0].Load(), ran[1].Load())
	}
}
