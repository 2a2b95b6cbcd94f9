package bus_test

import (
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestChunkWorkerKeysNotTakenForVerdict: a worker of an earlier build
// passes on a chunk whose metadata the tool wrote drained and tool_ran
// into, then ends the call interrupted (its caller's cancel), without
// either key. The client merged the chunks' metadata into the final, so
// the call read as cut by its worker's stop (drained), not its caller's
// cancel. A worker of this build drops both keys from what a tool
// writes and puts its own on the final frame alone: the client now takes
// them from there only, never from a chunk.
func TestChunkWorkerKeysNotTakenForVerdict(t *testing.T) {
	s := natstest.Embedded(t, false)
	standIn(t, s, "probe", func(id string) []*wire.Frame {
		chunk := toolkit.Text("partial")
		chunk.Metadata = map[string]any{wire.MetaDrained: true, wire.MetaToolRan: true, "status": "half"}
		final := toolkit.Final(id, toolkit.CodeInterrupted, "")
		final.Content = nil
		final.Metadata = map[string]any{wire.MetaWorker: "older"}
		return []*wire.Frame{
			{Kind: wire.KindChunk, ID: id, Seq: 1, Chunk: &chunk},
			{Kind: wire.KindFinal, ID: id, Seq: 2, Final: final, Chunks: 1},
		}
	})
	c := newClient(t, natstest.Connect(t, s), nil)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "probe-1", Name: "probe"})
	if r.Code != toolkit.CodeInterrupted || r.Text() != "partial" {
		t.Fatalf("the call ended %s %q, want interrupted with the partial output", r.Code, r.Text())
	}
	if _, ok := r.Metadata[wire.MetaDrained]; ok {
		t.Errorf("the final says %s = %v, taken from a chunk: its worker said no such thing", wire.MetaDrained, r.Metadata[wire.MetaDrained])
	}
	if _, ok := r.Metadata[wire.MetaToolRan]; ok {
		t.Errorf("the final says %s = %v, taken from a chunk: its worker said no such thing", wire.MetaToolRan, r.Metadata[wire.MetaToolRan])
	}
	if r.Metadata["status"] != "half" || r.Metadata[wire.MetaWorker] != "older" {
		t.Errorf("the final's metadata is %v, want the chunk's status and the final's worker", r.Metadata)
	}
}
