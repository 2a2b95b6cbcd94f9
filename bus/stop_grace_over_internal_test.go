package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopPastGraceLosesNoCall: a worker stopped with its grace period
// over at once (worker --grace 0, or a second signal right after the
// first) while callers keep sending it calls. The calls the server had
// delivered to it before its subscriptions' drain was confirmed were
// dropped with the subscriptions: nobody answered them, and their
// callers ended them worker_lost ("may or may not have taken effect") at
// their stall timeout, though none had run. Each call now ends with an
// answer: its result, interrupted, or unavailable (no worker left).
func TestStopPastGraceLosesNoCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	var ran atomic.Int64
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	over, cancel := context.WithCancel(context.Background())
	cancel()
	var mu sync.Mutex
	codes := map[toolkit.Code]int{}
	for round := range 5 {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			ran.Add(1)
			return w.Write(toolkit.Text("put"))
		})); err != nil {
			t.Fatal(err)
		}
		w, err := Serve(natstest.Connect(t, s), tk, &WorkerOptions{Instance: fmt.Sprintf("w%d", round), AnnounceInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg    sync.WaitGroup
			done  atomic.Bool
			calls atomic.Int64
		)
		for g := range 32 {
			wg.Go(func() {
				for i := 0; !done.Load(); i++ {
					r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: fmt.Sprintf("r%d-g%d-%d", round, g, i), Name: "put"})
					calls.Add(1)
					mu.Lock()
					codes[r.Code]++
					mu.Unlock()
				}
			})
		}
		natstest.WaitFor(t, "calls to run", func() bool { return calls.Load() >= 500 })
		w.Stop(over)
		done.Store(true)
		wg.Wait()
	}
	t.Logf("outcomes: %v; ran %d", codes, ran.Load())
	if n := codes[toolkit.CodeWorkerLost]; n > 0 {
		t.Fatalf("%d calls ended worker_lost at a stop (outcomes: %v)", n, codes)
	}
}
