package bus_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A chunk many times the server's max_payload was encoded whole before it
// was split, then each half, and so on down to pieces that fit: its size
// encoded again at every halving (log2 of size/max_payload times), all
// of it garbage. Only a chunk that may fit is encoded now.
func TestHugeChunkSplitBeforeEncoding(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 64 << 10 })
	const size = 16 << 20
	big := strings.Repeat("x", size)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("big", "Write one chunk of 16 MiB.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			return w.Write(toolkit.Text(big))
		}))
	serve(t, natstest.Conn(t, s), tk, nil)
	c := newClient(t, natstest.Conn(t, s), nil)

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "big"})
	runtime.ReadMemStats(&ms)
	if r.State != toolkit.StateSuccess || r.Text() != big {
		t.Fatalf("final %s %s, %d bytes", r.State, r.Code, len(r.Text()))
	}
	// The pieces cross the server and the client once each; the worker
	// encodes each once, the client accumulates them: a few times the
	// size. Encoding 16 MiB at each of 8 halvings is far more.
	if got := ms.TotalAlloc - before; got > 8*size {
		t.Errorf("the call allocated %d MiB for %d MiB of output", got>>20, size>>20)
	}
}
