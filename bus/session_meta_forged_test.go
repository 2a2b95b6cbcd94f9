package bus_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestToolCannotClaimSessionPin: session_worker and session_moved_from
// are the worker's word on where a session's stateful tools run. A
// stateless tool that wrote them (passing on another call's final
// metadata, an upstream's) went out with them: its caller was told the
// session ran on a worker it never touched, or moved, and the Go client
// took the tool for a session-bound one and the made-up instance for the
// session's pin (Client.Pin), sending the session's next calls there
// first. The worker drops them from what a tool writes, as it drops
// drained and tool_ran.
func TestToolCannotClaimSessionPin(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := storeToolkit(t)
	mustAdd(t, tk, toolkit.Raw("relay", "Pass on what another said.", map[string]any{"type": "object", "properties": map[string]any{}},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			c := toolkit.Text("relayed")
			c.Metadata = map[string]any{wire.MetaSessionWorker: "ghost", wire.MetaSessionMovedFrom: "w9", "other": "kept"}
			return w.Write(c)
		}))
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &bus.WorkerOptions{Instance: "w1", Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc)}})
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: "s", Input: map[string]any{"value": "v"}}); r.Text() != "kept" || r.Metadata[wire.MetaSessionWorker] != "w1" {
		t.Fatalf("put: %+v", r)
	}
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "relay", Session: "s", Input: map[string]any{}})
	if r.State != toolkit.StateSuccess || r.Metadata["other"] != "kept" {
		t.Fatalf("relay: %+v", r)
	}
	for _, k := range []string{wire.MetaSessionWorker, wire.MetaSessionMovedFrom} {
		if v, ok := r.Metadata[k]; ok {
			t.Errorf("the stateless tool's final carries %s = %v, written by the tool", k, v)
		}
	}
	if p := c.Pin("s"); p != "w1" {
		t.Errorf("Client.Pin(s) = %q after the tool's final, want w1", p)
	}
}
