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

// TestStopPastGracePassesOnWhatDidNotRun: one of two workers serving a
// tool stops with its grace over at once while callers keep calling.
// The calls delivered to it that it had not started were answered
// interrupted, which their callers read as cancelled, though none had
// run and the other worker was there to run them: they are passed on
// to the tool's queue group now. Only a call that started may end
// interrupted.
func TestStopPastGracePassesOnWhatDidNotRun(t *testing.T) {
	s := natstest.Embedded(t, false)
	var started sync.Map
	serve := func(instance string) *Worker {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			started.Store(call.ID, true)
			return w.Write(toolkit.Text("put"))
		})); err != nil {
			t.Fatal(err)
		}
		w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: instance, AnnounceInterval: -1})
		return w
	}
	serve("stays")
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	over, cancel := context.WithCancel(context.Background())
	cancel()
	var mu sync.Mutex
	codes := map[toolkit.Code]int{}
	var notRun []string
	for round := range 5 {
		w := serve(fmt.Sprintf("w%d", round))
		var (
			wg    sync.WaitGroup
			done  atomic.Bool
			calls atomic.Int64
		)
		for g := range 32 {
			wg.Go(func() {
				for i := 0; !done.Load(); i++ {
					id := fmt.Sprintf("r%d-g%d-%d", round, g, i)
					r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: id, Name: "put"})
					calls.Add(1)
					mu.Lock()
					codes[r.Code]++
					if _, ok := started.Load(id); !ok {
						notRun = append(notRun, fmt.Sprintf("%s (%s)", id, r.Code))
					}
					mu.Unlock()
				}
			})
		}
		natstest.WaitFor(t, "calls to run", func() bool { return calls.Load() >= 500 })
		w.Stop(over)
		done.Store(true)
		wg.Wait()
	}
	t.Logf("outcomes: %v", codes)
	if len(notRun) > 0 {
		t.Fatalf("%d calls ended without running though a worker served their tool: %v", len(notRun), notRun[:min(len(notRun), 10)])
	}
}
