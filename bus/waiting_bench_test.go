package bus_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// BenchmarkWaitingCall reports the goroutine stack a call holds on the
// worker while its tool waits (a typed function tool, as the bench's
// sleep), next to a raw replier's goroutine waiting the same way, both
// read from runtime.MemStats.StackInuse with 1000 calls waiting. Go
// doubles a stack that grows past its size, and a waiting call keeps it:
// a frame added under the tool can double the memory a fleet holds per
// call in flight (bench -s inflight), which this shows at once.
//
//	go test -run '^$' -bench BenchmarkWaitingCall ./bus/
func BenchmarkWaitingCall(b *testing.B) {
	const n = 1000
	type sleepIn struct {
		MS float64 `json:"ms"`
	}
	s := natstest.Embedded(b, false)
	release := make(chan struct{})
	var waiting atomic.Int64
	wait := func(ctx context.Context) {
		waiting.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	tk := toolkit.New(nil)
	mustAdd(b, tk, toolkit.Func("wait", "Wait until released.", func(ctx context.Context, in sleepIn) (string, error) {
		wait(ctx)
		return "done", nil
	}))
	wnc := natstest.Connect(b, s)
	serve(b, wnc, tk, &bus.WorkerOptions{MaxInFlight: 2 * n})
	if _, err := wnc.Subscribe("raw.wait", func(m *nats.Msg) {
		go func() { wait(context.Background()); m.Respond(nil) }()
	}); err != nil {
		b.Fatal(err)
	}
	cnc := natstest.Connect(b, s)
	if _, err := cnc.Subscribe("_INBOX.waiting.>", func(*nats.Msg) {}); err != nil {
		b.Fatal(err)
	}
	// stackPerCall starts n calls with send, waits until all wait, and
	// returns the stack they hold each.
	stackPerCall := func(send func(i int) error) float64 {
		var before, during runtime.MemStats
		goroutines := runtime.NumGoroutine()
		waiting.Store(0)
		release = make(chan struct{})
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			if err := send(i); err != nil {
				b.Fatal(err)
			}
		}
		for waiting.Load() < n {
			time.Sleep(time.Millisecond)
		}
		runtime.GC() // stacks shrink here when they can
		runtime.ReadMemStats(&during)
		close(release)
		for deadline := time.Now().Add(time.Minute); runtime.NumGoroutine() > goroutines+n/10; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) { // the calls end
				b.Fatalf("%d goroutines a minute after the calls were released, %d before", runtime.NumGoroutine(), goroutines)
			}
		}
		return float64(during.StackInuse-before.StackInuse) / n
	}
	var bus, raw float64
	round := 0
	for b.Loop() {
		round++
		bus += stackPerCall(func(i int) error {
			req := wire.Request{ID: "w" + strconv.Itoa(round) + "-" + strconv.Itoa(i), Input: map[string]any{"ms": 5.0}}
			data, err := msgpack.Marshal(&req)
			if err != nil {
				return err
			}
			return cnc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("wait", ""), Reply: "_INBOX.waiting." + strconv.Itoa(i), Data: data})
		})
		raw += stackPerCall(func(i int) error {
			return cnc.PublishRequest("raw.wait", "_INBOX.waiting.r"+strconv.Itoa(i), nil)
		})
	}
	b.ReportMetric(bus/float64(round), "stack-B/call")
	b.ReportMetric(raw/float64(round), "raw-stack-B/call")
}
