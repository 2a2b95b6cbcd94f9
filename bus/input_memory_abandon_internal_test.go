package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestInputMemoryOfCallAnsweredAtOnce: a call answered by the worker's
// clock (its deadline passed, the abandon came) before its reader went
// on with it gives its input memory back. The reader noted what the call
// took only after it was registered, so the clock's answer gave back
// nothing, and the memory stayed taken for good.
func TestInputMemoryOfCallAnsweredAtOnce(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	var answer sync.Once
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w", AbandonAfter: time.Millisecond,
		OnFinal: func(string, toolkit.State, toolkit.Code, time.Duration) { answer.Do(func() { close(answered) }) }})
	var held sync.Once
	w.afterAccept = func(*sender) {
		held.Do(func() {
			select {
			case <-answered:
			case <-time.After(time.Minute):
				t.Error("the held call was not answered")
			}
		})
	}
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": "x"}}); r.Code != toolkit.CodeTimeout {
		t.Fatalf("%s %s %q, want timeout", r.State, r.Code, r.Text())
	}
	natstest.WaitFor(t, "the call's input memory to be given back", func() bool {
		w.inputs.mu.Lock()
		defer w.inputs.mu.Unlock()
		return w.inputs.left == w.inputs.size
	})
}
