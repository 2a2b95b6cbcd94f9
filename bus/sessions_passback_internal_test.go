package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionCallPassedBack: a session's call of a tool only m serves
// reaches m, whose pin names a: m passes it on to a, which lacks the tool
// and passes it back through the queue group (Toolbus-Pin-Lost), to m
// again. m had the call among those running here until it silenced its
// copy, just after the pass-on: the call passed back in that moment (a
// busy machine) was refused as one already running here
// (invalid_input). It is out of m's calls before it is passed on now.
func TestSessionCallPassedBack(t *testing.T) {
	s := natstest.Embedded(t, false)
	tool := func(name string) *toolkit.Tool {
		return toolkit.Raw(name, name+".", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text(name + "d"))
		})
	}
	serveOne := func(instance, name string) *Worker {
		tk := toolkit.New(nil)
		if err := tk.Add(tool(name), toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		nc := natstest.Connect(t, s)
		w := serve(t, nc, tk, &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
		return w
	}
	serveOne("a", "put")
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
	// The moment between m's pass-on and its silencing of its copy, held
	// long enough for a to pass the call back.
	m.aff.afterForward = func() { time.Sleep(500 * time.Millisecond) }
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "browse", Session: "s"}); r.State != toolkit.StateSuccess || !strings.HasPrefix(r.Text(), "browsed") {
		t.Fatalf("browse, passed on and back: %s %s %q", r.State, r.Code, r.Text())
	}
}
