package bus_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
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
		s := startServer(b, tcp)
		text := strings.Repeat("x", 128)

		wnc := connect(b, s)
		tk := toolkit.New(nil)
		mustAdd(b, tk, echoTool())
		serve(b, wnc, tk, nil)
		if _, err := wnc.QueueSubscribe("raw.echo", "raw", func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
			b.Fatal(err)
		}
		wnc.Flush()
		cnc := connect(b, s)
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
