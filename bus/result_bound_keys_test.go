package bus_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// MaxResultBytes counted a metadata entry as its key's bytes and 16 for
// its value: a worker streaming chunks of many small keys (a new one
// each time, no value) had the client keep about four times the bound
// (measured: a heap 130 MiB larger for a bound of 32 MiB), each key
// costing its map far more than its bytes. What a map keeps for an
// entry counts now, as a block kept apart counts 256 bytes.
func TestClientResultBoundedManyKeys(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	if _, err := wnc.Subscribe(wire.CallSubject("keys", ""), func(m *nats.Msg) {
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		go func() {
			k := 0
			for seq := uint64(1); seq <= 1000; seq++ {
				md := make(map[string]any, 2000)
				for range 2000 {
					md[strconv.Itoa(k)] = nil
					k++
				}
				data, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindChunk, ID: req.ID, Seq: seq, Chunk: &toolkit.Chunk{Metadata: md}})
				if wnc.Publish(m.Reply, data) != nil {
					return
				}
			}
			data, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: req.ID, Seq: 1001, Chunks: 1000, Final: &toolkit.Response{State: toolkit.StateSuccess}})
			wnc.Publish(m.Reply, data)
		}()
	}); err != nil {
		t.Fatal(err)
	}
	wnc.Flush()
	const limit = 4 << 20
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxResultBytes: limit})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "keys"})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "ClientOptions.MaxResultBytes") {
		t.Fatalf("final %s %s with %d metadata keys: %.200q", r.State, r.Code, len(r.Metadata), r.Text())
	}
	// A key held costs at least its slot (a string header and an
	// interface: 32 bytes) and its own allocation (8 bytes at least).
	const minCost = 40
	if n := len(r.Metadata); n*minCost > limit {
		t.Errorf("%d metadata keys kept: at %d bytes each at least, over the bound of %d bytes", n, minCost, limit)
	}
}

// MetaSize walked at most 65,536 values of an entry and counted each one
// past them 16 bytes, a map or a list whatever it held: a worker putting
// a map of many keys behind a list of 65,536 nils had the client keep
// about seven times the bound (measured: a heap 235 MiB larger for a
// bound of 32 MiB). A body from the wire is at most 64 deep and not
// cyclic; the walk is bounded by depth and by far more values than a
// frame can hold.
func TestClientResultBoundedBehindManyValues(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	const keys = 60_000
	if _, err := wnc.Subscribe(wire.CallSubject("behind", ""), func(m *nats.Msg) {
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		go func() {
			k := 0
			for seq := uint64(1); seq <= 100; seq++ {
				list := make([]any, 1<<16+1)
				big := make(map[string]any, keys)
				for range keys {
					big[strconv.Itoa(k)] = nil
					k++
				}
				list[len(list)-1] = big
				data, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindChunk, ID: req.ID, Seq: seq,
					Chunk: &toolkit.Chunk{Metadata: map[string]any{"e" + strconv.Itoa(int(seq)): list}}})
				if wnc.Publish(m.Reply, data) != nil {
					return
				}
			}
			data, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: req.ID, Seq: 101, Chunks: 100, Final: &toolkit.Response{State: toolkit.StateSuccess}})
			wnc.Publish(m.Reply, data)
		}()
	}); err != nil {
		t.Fatal(err)
	}
	wnc.Flush()
	const limit = 16 << 20
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxResultBytes: limit})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "behind"})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "ClientOptions.MaxResultBytes") {
		t.Fatalf("final %s %s with %d metadata entries: %.200q", r.State, r.Code, len(r.Metadata), r.Text())
	}
	// An entry held costs at least its list's interfaces (16 bytes each)
	// and its map's keys (40 bytes each: see above).
	const minCost = (1<<16+1)*16 + keys*40
	if n := len(r.Metadata); n*minCost > limit {
		t.Errorf("%d metadata entries kept: at %d bytes each at least, over the bound of %d bytes", n, minCost, limit)
	}
}
