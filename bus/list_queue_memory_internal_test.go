package bus

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestListSizeCountsWhatARequestHolds: the list requests waiting are
// bounded by what listSize counts (maxListBytes), so it counts at least
// what a received request holds. It counted the bytes and 256 more, but
// a request with headers holds a parsed map besides (about 450 bytes,
// about 100 a key, about 40 a value): a request with a Content-Type held
// twice what it counted, one header of many short values four times, and
// the 64 MiB of waiting requests were 130 MiB and more.
func TestListSizeCountsWhatARequestHolds(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	pub := natstest.Connect(t, s)
	for _, headers := range []int{0, 1, 2, 5, 9, -200} { // -200: one header of 200 values
		n := 20_000
		if headers < 0 {
			n = 2_000
		}
		ch := make(chan *nats.Msg, n)
		sub, err := nc.ChanSubscribe("tools.list.>", ch)
		if err != nil {
			t.Fatal(err)
		}
		held := make([]*nats.Msg, 0, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			m := nats.NewMsg(fmt.Sprintf("tools.list.id%d", i%3000))
			m.Reply = fmt.Sprintf("_INBOX.id%d.l%d", i%3000, i)
			switch {
			case headers > 0:
				m.Header = nats.Header{}
				for j := range headers {
					m.Header.Set(fmt.Sprintf("Toolbus-X%d", j), "application/json")
				}
			case headers < 0:
				m.Header = nats.Header{}
				for range -headers {
					m.Header.Add("X", "a")
				}
			}
			m.Data = fmt.Appendf(nil, `{"session":"s%d"}`, i)
			if err := pub.PublishMsg(m); err != nil {
				t.Fatal(err)
			}
		}
		counted := 0
		for range n {
			m := <-ch
			counted += listSize(m)
			held = append(held, m)
		}
		sub.Unsubscribe()
		runtime.GC()
		runtime.ReadMemStats(&after)
		real := int(after.HeapAlloc) - int(before.HeapAlloc)
		t.Logf("%d headers: holds %d, counted %d", headers, real/n, counted/n)
		if real > counted {
			t.Errorf("%d requests with %d headers hold %d bytes, listSize counts %d", n, headers, real, counted)
		}
		runtime.KeepAlive(held)
	}
}
