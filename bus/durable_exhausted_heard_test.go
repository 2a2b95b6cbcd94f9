package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableExhaustedAfterFramesOfLastDelivery: the caller heard a chunk
// of the call's last delivery before that delivery's worker died. The
// fleet's answer to the exhausted call comes from another worker, as of
// the same delivery and numbered from 1: the caller took it for an old
// frame of that delivery and dropped it, and ended the call only at its
// next stall (from the kept final) or worker_lost itself. Here the stall
// timeout is longer than the test may run, so only that answer can end
// the call.
func TestDurableExhaustedAfterFramesOfLastDelivery(t *testing.T) {
	s := natstest.Embedded(t, false)
	// As in TestDurableExhausted: each delivery's worker is killed within
	// ackWait of the delivery, the survivor started before the last one
	// is, so that JetStream's advisory finds it listening.
	const ackWait, maxDeliver = 2 * time.Second, 2
	newWorker := func(instance string, hang bool) (*bus.Worker, *nats.Conn) {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("put", "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if !hang {
					return w.Write(toolkit.Text("done"))
				}
				if err := w.Write(toolkit.Text("partial")); err != nil {
					return err
				}
				<-ctx.Done() // the worker dies meanwhile
				return ctx.Err()
			}), toolkit.WithIdempotency(toolkit.Idempotent))
		return startDurableWorker(t, s, tk, bus.WorkerOptions{Instance: instance, Durable: &bus.DurableOptions{MaxDeliver: maxDeliver}}, ackWait, true)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond,
		StallTimeout: time.Hour, CancelGrace: time.Second})
	w, nc := newWorker("doomed-0", true)
	heard := make(chan string, 8) // the chunks the caller received
	done := make(chan *toolkit.Response, 1)
	go func() {
		var final *toolkit.Response
		for ev := range c.Call(ctxT(t), toolkit.ToolCall{ID: "heard", Name: "put", Durable: true}) {
			if ev.Chunk != nil {
				var text strings.Builder
				for _, b := range ev.Chunk.Content {
					text.WriteString(b.Text)
				}
				heard <- text.String()
			}
			final = ev.Final
		}
		done <- final
	}()
	for i := range maxDeliver {
		select {
		case text := <-heard:
			if text != "partial" {
				t.Fatalf("delivery %d: the caller heard %q", i+1, text)
			}
		case r := <-done:
			t.Fatalf("delivery %d: the call ended before the caller heard it: %+v", i+1, r)
		}
		if i == maxDeliver-1 {
			newWorker("survivor", false)
		}
		killDurableWorker(w, nc)
		if i < maxDeliver-1 {
			w, nc = newWorker(fmt.Sprint("doomed-", i+1), true)
		}
	}
	r := <-done
	if r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaWorker] != "survivor" ||
		!strings.Contains(r.Text(), fmt.Sprintf("was delivered %d times", maxDeliver)) ||
		fmt.Sprint(r.Metadata[wire.MetaAttempts]) != fmt.Sprint(maxDeliver) {
		t.Fatalf("an exhausted call whose last delivery the caller heard: %+v", r)
	}
}
