package bus

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCallerGoneProbesForgotten: a call that probed its caller is out of
// the worker's probes once it ends, however it ends: its own final, its
// caller's cancel, an abandon of a tool that ignores its ended context.
func TestCallerGoneProbesForgotten(t *testing.T) {
	s := natstest.Embedded(t, false)
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	release, finish := make(chan struct{}), make(chan struct{})
	tk := toolkit.New(nil)
	for name, run := range map[string]func(ctx context.Context) error{
		"slow": func(ctx context.Context) error { <-finish; return nil }, // once it probed
		"wait": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		"deaf": func(ctx context.Context) error { <-release; return nil },
	} {
		if err := tk.Add(toolkit.Raw(name, name+".", schema, func(ctx context.Context, _ *toolkit.Call, w toolkit.Writer) error {
			if err := run(ctx); err != nil {
				return err
			}
			return w.Write(toolkit.Text("done"))
		})); err != nil {
			t.Fatal(err)
		}
	}
	defer close(release)
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{AbandonAfter: 200 * time.Millisecond})
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	probes := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.probes)
	}
	for _, name := range []string{"slow", "wait", "deaf"} {
		ctx, cancel := context.WithCancel(natstest.Ctx(t))
		done := make(chan *toolkit.Response, 1)
		go func() { done <- c.Invoke(ctx, toolkit.ToolCall{Name: name}) }()
		natstest.WaitFor(t, name+" probing", func() bool { return probes() == 1 })
		if name == "slow" {
			close(finish)
		} else {
			cancel()
		}
		r := <-done
		cancel()
		natstest.WaitFor(t, name+"'s probes forgotten", func() bool { return probes() == 0 })
		t.Logf("%s: %s", name, r.Code)
	}
}
