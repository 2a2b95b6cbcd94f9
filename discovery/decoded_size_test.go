package discovery

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestFleetCountsDecodedSize: a fleet bounded the announcements it keeps
// by their bytes as received, but an announcement of many small tools
// takes about ten times more decoded (100,000 tools with empty schemas:
// 8.8 MB on the wire, some 105 MB on the heap), so the 128 MiB bound let
// a fleet hold well over a gigabyte. It counts an estimate of the decoded
// size (decodedSize); this measures the heap a decoded announcement
// takes and wants the count within a factor of two of it, for small
// tools, tools with larger schemas, and long descriptions (where the
// wire and the heap agree). Orders of magnitude, not exact values: the
// heap is measured in a process that runs other goroutines.
func TestFleetCountsDecodedSize(t *testing.T) {
	props := map[string]any{}
	for i := range 5 {
		props[fmt.Sprint("field", i)] = map[string]any{"type": "string", "description": "What the field is for, in a few words."}
	}
	shapes := []struct {
		name  string
		tools int
		desc  string
		props map[string]any
	}{
		{"small tools", 20_000, "x", map[string]any{}},
		{"schemas with properties", 4_000, "Does one thing.", props},
		{"long descriptions", 200, strings.Repeat("A long description. ", 200), map[string]any{}},
	}
	msgs := make([]*nats.Msg, len(shapes))
	measured := make([]uint64, len(shapes))
	for i, sh := range shapes {
		ann := wire.Announcement{Format: 1, Instance: fmt.Sprint("w", i), EpochMS: 1, Seq: 1, IntervalMS: 3_600_000}
		for j := range sh.tools {
			ann.Tools = append(ann.Tools, wire.AnnouncedTool{Name: fmt.Sprint("tool", j), Description: sh.desc, Group: "basic", Idempotency: "unknown",
				Parameters: map[string]any{"type": "object", "properties": sh.props}})
		}
		b, err := wire.Msgpack.Marshal(&ann)
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = &nats.Msg{Subject: wire.AnnounceSubject(ann.Instance), Data: b}
		// Measured before any server runs in the process.
		measured[i] = decodedHeap(t, msgs[i])
	}

	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 8 << 20 })
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	nc := natstest.Conn(t, s)
	for i, sh := range shapes {
		if err := nc.PublishMsg(msgs[i]); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprint("w", i)
		natstest.WaitFor(t, id+" listed", func() bool { return listed(f, id) })
		f.mu.Lock()
		counted := f.instances[id].size
		f.mu.Unlock()
		t.Logf("%s: %d tools, %d bytes on the wire, %d on the heap, %d counted", sh.name, sh.tools, len(msgs[i].Data), measured[i], counted)
		if c, m := uint64(counted), measured[i]; c < m/2 || c > 2*m {
			t.Errorf("%s: the fleet counts %d bytes for an announcement that takes %d on the heap (%d on the wire); want within a factor of two",
				sh.name, counted, m, len(msgs[i].Data))
		}
	}
}

// decodedHeap is the heap an announcement takes once decoded, as the
// fleet keeps it.
func decodedHeap(t *testing.T, m *nats.Msg) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ann, _, err := decodeAnnouncement(m)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ann)
	if after.HeapAlloc < before.HeapAlloc {
		t.Fatalf("the heap shrank while decoding (%d to %d bytes): nothing measured", before.HeapAlloc, after.HeapAlloc)
	}
	return after.HeapAlloc - before.HeapAlloc
}
