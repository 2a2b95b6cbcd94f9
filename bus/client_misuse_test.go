package bus_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestHugeRetryAfterIsNotRetried: a worker answering overloaded with a
// retry_after_ms far past the client's own wait (here about 317 years,
// whose nanoseconds overflow a time.Duration) ends the call overloaded;
// the call is not sent again at once.
func TestHugeRetryAfterIsNotRetried(t *testing.T) {
	s := natstest.Embedded(t, false)
	// The fleet announces the tool read-only; the only one taking its
	// calls answers every one overloaded, "retry in 10^13 ms".
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("busy", "Always busy.", func(context.Context, struct{}) (string, error) { return "", nil }), toolkit.ReadOnly())
	a, err := discovery.NewAnnouncer(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	nc := natstest.Connect(t, s)
	var calls atomic.Int32
	if _, err := nc.QueueSubscribe(wire.CallSubject("busy", ""), bus.DefaultQueue, func(m *nats.Msg) {
		calls.Add(1)
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		f := &wire.Frame{Kind: wire.KindFinal, ID: req.ID, Seq: 1, Final: toolkit.Final(req.ID, toolkit.CodeOverloaded, "OverloadedError: busy.")}
		f.Final.Metadata = map[string]any{wire.MetaRetryAfterMS: uint64(10_000_000_000_000)}
		data, err := wire.Msgpack.Marshal(f)
		if err != nil {
			t.Error(err)
			return
		}
		m.Respond(data)
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.Fleet(ctxT(t)); err != nil { // the fleet view knows busy is read-only
		t.Fatal(err)
	}
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "busy"})
	if r.Code != toolkit.CodeOverloaded || calls.Load() != 1 || r.Metadata[wire.MetaAttempts] != nil {
		t.Fatalf("final %s %q %v after %d sends; want overloaded after one", r.Code, r.Text(), r.Metadata, calls.Load())
	}
}
