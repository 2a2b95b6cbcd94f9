package bus_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A frame numbered far ahead (a worker's numbering gone wrong, or a frame
// published to the caller's inbox by anyone) made the client drop every
// later frame of a core call as old, the final included: the call ended
// worker_lost at the stall timeout, a cancel was published for a call
// that had ended, and a read-only or idempotent tool was sent again. A
// call ends at its first final, so none is dropped as old: a second one
// cannot get through either way.
func TestFinalAfterAFrameFarAhead(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	if _, err := wnc.Subscribe(wire.CallSubject("ahead", ""), func(m *nats.Msg) {
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		for _, f := range []*wire.Frame{
			{Kind: wire.KindHeartbeat, ID: req.ID, Seq: 1 << 62},
			{Kind: wire.KindFinal, ID: req.ID, Seq: 2, Final: toolkit.Final(req.ID, "", "done")},
		} {
			data, _ := wire.Msgpack.Marshal(f)
			wnc.Publish(m.Reply, data)
		}
	}); err != nil {
		t.Fatal(err)
	}
	wnc.Flush()
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxAttempts: 1})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "ahead"}); r.State != toolkit.StateSuccess || r.Text() != "done" {
		t.Fatalf("final %s %s: %q", r.State, r.Code, r.Text())
	}
}
