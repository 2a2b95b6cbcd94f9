package bus

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestInputMemoryCountsHeaders: MaxInputMemory bounds what the requests
// of the calls a worker holds take, but counted their bodies alone. A
// request of a tiny body and a header of half a megabyte held about a
// megabyte while its call ran (its headers as received, and decoded), so
// 200 such calls of a tool that takes its time held 200 MB of a worker
// whose bound was 16 MiB. A request's headers now count too: calls past
// the bound wait for memory, as calls of large bodies do.
func TestInputMemoryCountsHeaders(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	var running atomic.Int64
	release := make(chan struct{})
	if err := tk.Add(toolkit.Func("hold", "Holds until released.", func(ctx context.Context, in struct{}) (int, error) {
		running.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return 0, nil
	})); err != nil {
		t.Fatal(err)
	}
	const bound = 16 << 20
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{MaxInFlight: 512, MaxInputMemory: bound})
	t.Cleanup(func() { close(release) }) // before the worker's stop
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	nc := natstest.Connect(t, s)
	pad := strings.Repeat("p", 512<<10)
	before := heap()
	const n = 200
	for i := range n {
		data, err := wire.Msgpack.Marshal(&wire.Request{ID: "h" + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("hold", ""), Reply: nats.NewInbox(), Header: nats.Header{"X-Pad": {pad}}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	// Every call taken: running, or waiting for memory.
	natstest.WaitFor(t, "the calls taken", func() bool {
		return running.Load()+int64(w.memWaiting.Load()) == n
	})
	if r := running.Load(); r > bound/int64(len(pad))+1 {
		t.Fatalf("%d of %d calls with a header of %d bytes run at once with MaxInputMemory %d: the worker's heap grew by %d MB", r, n, len(pad), bound, (heap()-before)>>20)
	}
}
