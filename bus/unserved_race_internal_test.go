package bus

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRemovedBeforeDispatch: a tool removed after the worker checked it
// still serves it and before the toolkit looked it up is passed on as a
// tool removed earlier is (here to worker b, which serves it), not
// answered not_found, nor reported refused where it met the removal
// (Options.OnRefused): it runs elsewhere.
func TestRemovedBeforeDispatch(t *testing.T) {
	s := natstest.Embedded(t, false)
	echo := func() *toolkit.Tool {
		return toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		})
	}
	var refused atomic.Int32
	tkA := toolkit.New(&toolkit.Options{OnRefused: func(context.Context, toolkit.ToolCall, *toolkit.Response) { refused.Add(1) }})
	tkB := toolkit.New(nil)
	for _, tk := range []*toolkit.Toolkit{tkA, tkB} {
		if err := tk.Add(echo()); err != nil {
			t.Fatal(err)
		}
	}
	a := serve(t, natstest.Connect(t, s), tkA, &WorkerOptions{Instance: "a"})
	var once sync.Once
	removed := make(chan struct{})
	a.beforeDispatch = func(s *sender) {
		once.Do(func() { tkA.Remove(s.call.Name); close(removed) })
	}
	serve(t, natstest.Connect(t, s), tkB, &WorkerOptions{Instance: "b"})
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i := 0; ; i++ {
		text := strconv.Itoa(i)
		r := c.Invoke(t.Context(), toolkit.ToolCall{ID: "c" + text, Name: "echo", Input: map[string]any{"text": text}})
		if r.State != toolkit.StateSuccess || r.Text() != text {
			t.Fatalf("call %d: %s %s %q (worker %v)", i, r.State, r.Code, r.Text(), r.Metadata["worker"])
		}
		select {
		case <-removed:
			if r.Metadata["worker"] != "b" {
				t.Fatalf("the call that met the removal was answered by %v, want b", r.Metadata["worker"])
			}
			if n := refused.Load(); n != 0 {
				t.Fatalf("worker a reported %d refusals of a call it passed on", n)
			}
			return
		default:
		}
		if i > 1000 {
			t.Fatal("no call reached worker a")
		}
	}
}
