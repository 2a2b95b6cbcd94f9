package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// store is a session-bound tool's state on one worker: what each
// session wrote there.
type store struct {
	mu   sync.Mutex
	data map[string]string
}

// storeToolkit has put and get: session-bound, each session's value in
// the toolkit's own memory.
func storeToolkit(t *testing.T) *toolkit.Toolkit {
	st := &store{data: map[string]string{}}
	tk := toolkit.New(nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}
	mustAdd(t, tk, toolkit.Raw("put", "Keep a value.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		st.mu.Lock()
		st.data[call.Session], _ = call.Input["value"].(string)
		st.mu.Unlock()
		return w.Write(toolkit.Text("kept"))
	}), toolkit.SessionBound())
	mustAdd(t, tk, toolkit.Raw("get", "Read the value.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		st.mu.Lock()
		v, ok := st.data[call.Session]
		st.mu.Unlock()
		if !ok {
			return fmt.Errorf("nothing kept")
		}
		return w.Write(toolkit.Text(v))
	}), toolkit.SessionBound(), toolkit.ReadOnly())
	return tk
}

// affinityWorker serves put/get (session-bound, state in its own memory)
// and echo (stateless) with session affinity on.
func affinityWorker(t *testing.T, s *embedded.Server, instance string) (*bus.Worker, *nats.Conn) {
	t.Helper()
	tk := storeToolkit(t)
	mustAdd(t, tk, echoTool())
	nc := natstest.Connect(t, s)
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: instance,
		Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(ctxT(t)) })
	return w, nc
}

func TestSessionAffinity(t *testing.T) {
	s := natstest.Embedded(t, false)
	workers := map[string]*nats.Conn{}
	var ws = map[string]*bus.Worker{}
	for _, name := range []string{"w1", "w2", "w3"} {
		ws[name], workers[name] = affinityWorker(t, s, name)
	}
	// Two clients: one learns the pin from finals and sends there; the
	// other (like a new toolctl each time) never remembers it.
	c := newClient(t, natstest.Connect(t, s), nil)
	for i := range 10 {
		session := fmt.Sprint("s", i)
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: session, Input: map[string]any{"value": session}}); r.Text() != "kept" {
			t.Fatalf("put: %+v", r)
		}
		pinned := c.Pin(session)
		if pinned == "" {
			t.Fatalf("%s: no pin learned", session)
		}
		for range 4 {
			fresh := newClient(t, natstest.Connect(t, s), nil)
			for _, cl := range []*bus.Client{c, fresh} {
				r := cl.Invoke(ctxT(t), toolkit.ToolCall{Name: "get", Session: session})
				if r.Text() != session || r.Metadata[wire.MetaWorker] != pinned || r.Metadata[wire.MetaSessionWorker] != pinned {
					t.Fatalf("%s (pinned to %s): %+v", session, pinned, r)
				}
			}
			fresh.Close()
		}
		// A stateless tool says nothing about pins.
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Session: session, Input: map[string]any{"text": "x"}}); r.Metadata[wire.MetaSessionWorker] != nil {
			t.Fatalf("echo: %+v", r)
		}
	}

	// The pinned worker dies: the session moves, and the final says so.
	pinned := c.Pin("s0")
	workers[pinned].Close()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ws[pinned].Stop(gone)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "get", Session: "s0"})
	if r.Code != toolkit.CodeToolError || r.Metadata[wire.MetaSessionMovedFrom] != pinned || r.Metadata[wire.MetaSessionWorker] == pinned ||
		!strings.Contains(r.Text(), "moved from worker "+pinned) {
		t.Fatalf("after its worker died: %+v", r)
	}
	moved := c.Pin("s0")
	if moved == "" || moved == pinned {
		t.Fatalf("pin after the move: %q", moved)
	}
	// Pinned again, nothing more to say.
	c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: "s0", Input: map[string]any{"value": "again"}})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "get", Session: "s0"}); r.Text() != "again" || r.Metadata[wire.MetaSessionMovedFrom] != nil {
		t.Fatalf("after the move: %+v", r)
	}
	// A client that still knows nothing goes through the queue group: the
	// worker there passes the call on, or takes a session whose worker is gone.
	for i := 1; i < 10; i++ {
		session := fmt.Sprint("s", i)
		fresh := newClient(t, natstest.Connect(t, s), nil)
		r := fresh.Invoke(ctxT(t), toolkit.ToolCall{Name: "get", Session: session})
		fresh.Close()
		if r.Metadata[wire.MetaSessionMovedFrom] == nil && r.Text() != session {
			t.Fatalf("%s: %+v", session, r)
		}
	}
}
