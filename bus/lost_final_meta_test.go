package bus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestClientWorkerLostCarriesNoChunkMetadata: a worker streams a chunk
// whose metadata says session_worker (a tool's key, or one an earlier
// build passed on), tool_ran and a status of the tool's, then goes
// silent. The worker_lost final the client made at its stall timeout
// carried all three, copied from the chunk: the client pinned the
// session to the named worker (Pin), and the final claimed a run its
// worker never reported. A worker's own worker_lost carries its instance
// and nothing of the tool's; the client's now carries nothing it does
// not know itself (the partial output stays in its content, as the
// chunk events gave it).
func TestClientWorkerLostCarriesNoChunkMetadata(t *testing.T) {
	s := natstest.Embedded(t, false)
	standIn(t, s, "probe", func(id string) []*wire.Frame {
		chunk := toolkit.Text("partial")
		chunk.Metadata = map[string]any{wire.MetaSessionWorker: "ghost", wire.MetaToolRan: true, "status": "half"}
		return []*wire.Frame{{Kind: wire.KindChunk, ID: id, Seq: 1, Chunk: &chunk}} // and then nothing: the worker is lost
	})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 300 * time.Millisecond})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "probe-1", Name: "probe", Session: "s1"})
	if r.Code != toolkit.CodeWorkerLost || !strings.HasPrefix(r.Text(), "partial") {
		t.Fatalf("the call ended %s %q, want worker_lost with the partial output", r.Code, r.Text())
	}
	if len(r.Metadata) != 0 {
		t.Errorf("the client's worker_lost final carries metadata %v, want none (nothing of the chunks')", r.Metadata)
	}
	if pin := c.Pin("s1"); pin != "" {
		t.Errorf("the session is pinned to %q after its call's worker was lost, want no pin", pin)
	}
}
