package bus_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// BenchmarkEcho compares a full echo call over the bus (client → worker →
// toolkit → final) with a raw nc.Request to a replier that echoes the
// body, on the same embedded server, with 1 and 64 concurrent callers.
//
//	go test -run '^$' -bench BenchmarkEcho -benchtime 3s ./bus/
func BenchmarkEcho(b *testing.B) {
	for _, tcp := range []bool{false, true} {
		transport := map[bool]string{false: "inprocess", true: "tcp"}[tcp]
		s := natstest.Embedded(b, tcp)
		text := strings.Repeat("x", 128)

		wnc := natstest.Connect(b, s)
		tk := toolkit.New(nil)
		mustAdd(b, tk, echoTool())
		serve(b, wnc, tk, nil)
		if _, err := wnc.QueueSubscribe("raw.echo", "raw", func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
			b.Fatal(err)
		}
		wnc.Flush()
		cnc := natstest.Connect(b, s)
		c := newClient(b, cnc, nil)
		payload := []byte(text)

		calls := map[string]func(i int) error{
			"raw": func(int) error {
				_, err := cnc.Request("raw.echo", payload, guard)
				return err
			},
			"bus": func(i int) error {
				r := c.Invoke(context.Background(), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": text}})
				if r.State != toolkit.StateSuccess {
					return fmt.Errorf("%+v", r)
				}
				return nil
			},
		}
		for _, callers := range []int{1, 64} {
			for _, kind := range []string{"raw", "bus"} {
				call := calls[kind]
				b.Run(fmt.Sprintf("%s/%s/callers=%d", transport, kind, callers), func(b *testing.B) {
					b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
					if callers == 1 {
						for i := 0; b.Loop(); i++ {
							if err := call(i); err != nil {
								b.Fatal(err)
							}
						}
						return
					}
					b.RunParallel(func(pb *testing.PB) {
						for i := 0; pb.Next(); i++ {
							if err := call(i); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		}
	}
}

var _ = bus.DefaultQueue

// BenchmarkStream compares a streaming call (100 chunks of 1 KiB, then the
// final) with a raw replier publishing 101 messages of 1 KiB to the
// caller's inbox, on the same in-process server, one call at a time. The
// output is larger than the worker's hold limit, so the chunks really
// travel as chunk frames.
//
//	go test -run '^$' -bench BenchmarkStream -benchtime 3s ./bus/
func BenchmarkStream(b *testing.B) {
	const chunks = 100
	s := natstest.Embedded(b, false)
	text := strings.Repeat("x", 1024)
	payload := []byte(text)

	wnc := natstest.Connect(b, s)
	tk := toolkit.New(nil)
	mustAdd(b, tk, toolkit.Stream("stream", "Streams chunks.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for range chunks {
			if err := w.Write(toolkit.Text(text)); err != nil {
				return err
			}
		}
		return nil
	}))
	serve(b, wnc, tk, nil)
	if _, err := wnc.Subscribe("raw.stream", func(m *nats.Msg) {
		for range chunks + 1 {
			wnc.Publish(m.Reply, payload)
		}
	}); err != nil {
		b.Fatal(err)
	}
	wnc.Flush()
	cnc := natstest.Connect(b, s)
	c := newClient(b, cnc, nil)

	b.Run("raw", func(b *testing.B) {
		inbox := cnc.NewInbox()
		got := make(chan struct{}, 1)
		n := 0
		sub, err := cnc.Subscribe(inbox, func(*nats.Msg) {
			if n++; n == chunks+1 {
				n = 0
				got <- struct{}{}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		for b.Loop() {
			if err := cnc.PublishRequest("raw.stream", inbox, nil); err != nil {
				b.Fatal(err)
			}
			<-got
		}
		b.ReportMetric(float64(b.N*chunks)/b.Elapsed().Seconds(), "chunks/s")
	})
	// raw-chan hands each message to the calling goroutine, as any
	// iterator over a call's frames must.
	b.Run("raw-chan", func(b *testing.B) {
		inbox := cnc.NewInbox()
		ch := make(chan *nats.Msg, 4*chunks)
		sub, err := cnc.Subscribe(inbox, func(m *nats.Msg) { ch <- m })
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		for b.Loop() {
			if err := cnc.PublishRequest("raw.stream", inbox, nil); err != nil {
				b.Fatal(err)
			}
			for range chunks + 1 {
				<-ch
			}
		}
		b.ReportMetric(float64(b.N*chunks)/b.Elapsed().Seconds(), "chunks/s")
	})
	b.Run("bus", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for ev := range c.Call(context.Background(), toolkit.ToolCall{Name: "stream"}) {
				if ev.Chunk != nil {
					n++
				}
				if ev.Final != nil && (ev.Final.State != toolkit.StateSuccess || len(ev.Final.Text()) != chunks*len(text)) {
					b.Fatalf("%+v", ev.Final.State)
				}
			}
			if n != chunks {
				b.Fatalf("%d chunk events, want %d", n, chunks)
			}
		}
		b.ReportMetric(float64(b.N*chunks)/b.Elapsed().Seconds(), "chunks/s")
	})
}

// BenchmarkDurableEcho is an echo call on the durable path (queued in the
// calls stream, pulled, its final kept, acknowledged), 64 callers at once,
// in one process; cmd/bench compares it with a bare JetStream work queue.
//
//	go test -run '^$' -bench BenchmarkDurableEcho -benchmem ./bus/
func BenchmarkDurableEcho(b *testing.B) {
	s := natstest.Embedded(b, false)
	wnc := natstest.Connect(b, s)
	js := natstest.JS(b, wnc)
	tk := toolkit.New(nil)
	mustAdd(b, tk, echoTool(), toolkit.WithIdempotency(toolkit.Idempotent))
	serve(b, wnc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: js}, Results: &bus.ResultsOptions{JetStream: js}})
	c := newClient(b, natstest.Connect(b, s), nil)
	text := strings.Repeat("x", 128)
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := c.Invoke(context.Background(), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": text}, Durable: true})
			if r.State != toolkit.StateSuccess {
				b.Errorf("%+v", r)
				return
			}
		}
	})
}
