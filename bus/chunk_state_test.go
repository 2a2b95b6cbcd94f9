package bus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestChunkOfUnknownStateArrives: a tool may write a chunk whose state is
// none of the five (toolkit.MergeState ignores it); the wire carries only
// those (wire.Frame.Check), so the worker sends such a chunk without its
// state, and its content reaches the caller as it does in-process, also
// when it streams.
func TestChunkOfUnknownStateArrives(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	big := strings.Repeat("x", 40<<10) // over the hold limit: streamed
	mustAdd(t, tk, toolkit.Raw("odd", "Writes a chunk of an odd state.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: big}}, State: "partial"})
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	in := tk.Invoke(ctxT(t), toolkit.ToolCall{Name: "odd"})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "odd"})
	if r.State != in.State || r.Text() != in.Text() {
		t.Fatalf("over the bus: %s with %d bytes of text; in-process: %s with %d", r.State, len(r.Text()), in.State, len(in.Text()))
	}
}
