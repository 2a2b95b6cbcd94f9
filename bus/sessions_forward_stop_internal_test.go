package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionCallBeingPassedOnHoldsStop: a session's call that m passes
// on to the session's worker a is out of m's running calls before the
// pass-on (TestSessionCallPassedBack), but until it is passed on (or
// answered) m's Stop still waits for it: a Stop that found m idle then
// would return with the call neither passed on nor answered, and the
// connection closed after it would lose the call.
func TestSessionCallBeingPassedOnHoldsStop(t *testing.T) {
	s := natstest.Embedded(t, false)
	tool := func(name string) *toolkit.Tool {
		return toolkit.Raw(name, name+".", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text(name + "d"))
		})
	}
	serveOne := func(instance string, names ...string) *Worker {
		tk := toolkit.New(nil)
		for _, name := range names {
			if err := tk.Add(tool(name), toolkit.SessionBound()); err != nil {
				t.Fatal(err)
			}
		}
		nc := natstest.Connect(t, s)
		w := serve(t, nc, tk, &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
		return w
	}
	serveOne("a", "put", "browse")
	m := serveOne("m", "browse")
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.State != toolkit.StateSuccess {
		t.Fatalf("put: %+v", r)
	}
	held := make(chan bool, 1)
	m.aff.beforeForward = func() {
		// What Stop's wait for the running calls reads (waitIdle).
		m.mu.Lock()
		idle := len(m.calls) == 0 && m.finishing.Load() == 0
		m.mu.Unlock()
		held <- !idle
	}
	for i := 0; ; i++ {
		// The queue group hands the call to m or a: until m has it. A
		// client of its own each time, which does not know the session's
		// worker (and would send the call there).
		ci, err := NewClient(natstest.Connect(t, s), nil)
		if err != nil {
			t.Fatal(err)
		}
		r := ci.Invoke(ctx, toolkit.ToolCall{Name: "browse", Session: "s"})
		ci.Close()
		if r.State != toolkit.StateSuccess || !strings.HasPrefix(r.Text(), "browsed") {
			t.Fatalf("browse: %s %s %q", r.State, r.Code, r.Text())
		}
		select {
		case ok := <-held:
			if !ok {
				t.Fatal("while m passed the call on, m's Stop would have found no call running")
			}
			return
		default:
		}
		if i > 200 {
			t.Fatal("no call reached m")
		}
	}
}
