package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForwardedCallCountedOnce: a session's call that reaches a worker
// other than the session's is passed on and answered by the session's
// worker; the fleet's OnFinal (the calls metric) hears of it once, from
// the worker that answered, not from the one that passed it on.
func TestForwardedCallCountedOnce(t *testing.T) {
	s := natstest.Embedded(t, false)
	var mu sync.Mutex
	counted := map[string][]string{} // instance: state/code of each final
	start := func(instance string) *Worker {
		tk := toolkit.New(nil)
		if err := tk.Add(putTool(instance, nil), toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		nc := natstest.Connect(t, s)
		return serve(t, nc, tk, &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)},
			OnFinal: func(tool string, state toolkit.State, code toolkit.Code, _ time.Duration) {
				mu.Lock()
				counted[instance] = append(counted[instance], string(state)+"/"+string(code))
				mu.Unlock()
			}})
	}
	a := start("a")
	start("b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := wire.SessionKey("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.aff.kv.Create(ctx, key, []byte("a")); err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	// Sent to b's own subject, as a client that learnt b for the session.
	cl.notePin(toolkit.ToolCall{Name: "put", Session: "s"}, &toolkit.Response{Metadata: map[string]any{wire.MetaSessionWorker: "b"}})
	if r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.State != toolkit.StateSuccess || r.Text() != "put on a" {
		t.Fatalf("the call: %s %s %q, want it run on a", r.State, r.Code, r.Text())
	}
	// Another call, straight to a now (the final named it).
	if r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.State != toolkit.StateSuccess {
		t.Fatalf("the second call: %s %s", r.State, r.Code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(counted["a"])+len(counted["b"]) != 2 || len(counted["b"]) != 0 {
		t.Errorf("counted on a %v, on b %v; want the two calls once each, on a", counted["a"], counted["b"])
	}
}
