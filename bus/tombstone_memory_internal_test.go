package bus

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTombstonesHoldNoCancelsHeaders: a caller may send cancels of call
// ids of its own that no worker knows, and each leaves a tombstone
// keeping the reply subject its Toolbus-Reply names. That reply subject
// was kept as the cancel's header decoded it: a part of the whole header
// block, so a cancel padded with a header of half a megabyte (or naming
// a reply subject that long) kept all of it for the tombstone's 30 s,
// and a caller's 10,000 tombstones held gigabytes of a worker's memory.
// A tombstone now keeps a copy of a reply subject at most
// wire.MaxReplyLen long, and a cancel naming a longer one, which no call
// the worker answers has, is ignored.
func TestTombstonesHoldNoCancelsHeaders(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "ran", nil })); err != nil {
		t.Fatal(err)
	}
	w := serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	const n, size = 200, 512 << 10
	pad := strings.Repeat("p", size)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, how := range []string{"padded", "long reply"} {
		t.Run(how, func(t *testing.T) {
			identity := strings.ReplaceAll(how, " ", "-")
			before := heap()
			for i := range n {
				m := cancelMsg(wire.CancelSubject(identity, "c"+strconv.Itoa(i)), "")
				m.Header.Set(wire.HeaderReply, wire.Inbox(identity)+"x."+strconv.Itoa(i))
				if how == "padded" {
					m.Header.Set("X-Pad", pad)
				} else {
					m.Header.Set(wire.HeaderReply, wire.Inbox(identity)+pad+strconv.Itoa(i))
				}
				if err := nc.PublishMsg(m); err != nil {
					t.Fatal(err)
				}
			}
			// The last one, plain: once its tombstone is there, the worker
			// has taken every cancel before it.
			if err := nc.PublishMsg(cancelMsg(wire.CancelSubject(identity, "last"), "")); err != nil {
				t.Fatal(err)
			}
			natstest.WaitFor(t, "the cancels taken", func() bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				_, ok := w.tombs[callKey(identity, "last")]
				return ok
			})
			if grew := int64(heap()) - int64(before); grew > n*size/4 {
				t.Errorf("%d cancels %s with %d bytes: the worker's heap grew by %d bytes", n, how, size, grew)
			}
		})
	}
}
