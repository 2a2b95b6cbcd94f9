package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRefusedAfterAbandon: a call cancelled while it waits for the
// toolkit (here held before its dispatch) is answered interrupted by the
// worker's clock; the toolkit then refuses it (invalid input). Its
// middleware chain never ran, so Options.OnRefused hears of it, once.
func TestRefusedAfterAbandon(t *testing.T) {
	s := natstest.Embedded(t, false)
	var refused atomic.Int32
	tk := toolkit.New(&toolkit.Options{OnRefused: func(context.Context, toolkit.ToolCall, *toolkit.Response) { refused.Add(1) }})
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{}, 1)
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w", AbandonAfter: 50 * time.Millisecond,
		OnFinal: func(string, toolkit.State, toolkit.Code, time.Duration) {
			select {
			case answered <- struct{}{}:
			default:
			}
		}})
	held, release := make(chan struct{}), make(chan struct{})
	w.beforeDispatch = func(*sender) {
		close(held)
		<-release
	}
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	go c.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": 5}})
	<-held
	cancel()
	select {
	case <-answered:
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call was not answered")
	}
	close(release)
	// The refusal is reported before the call gives its slot back.
	deadline := time.Now().Add(time.Minute)
	for len(w.slots) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call kept its slot")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := refused.Load(); n != 1 {
		t.Fatalf("the call refused after it was answered was reported %d times to OnRefused, want 1", n)
	}
}
