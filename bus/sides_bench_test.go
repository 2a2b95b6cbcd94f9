package bus_test

import (
	"context"
	"fmt"
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

// BenchmarkSides splits BenchmarkEcho's echo call into its two sides, over
// TCP: "client" is the bus client against a replier that answers every
// request with a final frame encoded once (the client's own cost next to
// nc.Request's, "raw"); "worker" is the worker answering requests encoded
// by the caller and sent with nc.Request (the worker's own cost next to a
// raw replier's that echoes the same request, "raw").
//
//	go test -run '^$' -bench BenchmarkSides -benchmem ./bus/
func BenchmarkSides(b *testing.B) {
	s := natstest.Embedded(b, true)
	text := strings.Repeat("x", 128)
	final, err := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: "x", Seq: 1,
		Final: &toolkit.Response{State: toolkit.StateSuccess, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: text}}, Metadata: map[string]any{wire.MetaWorker: "w1"}}})
	if err != nil {
		b.Fatal(err)
	}
	wnc := natstest.Connect(b, s)
	if _, err := wnc.QueueSubscribe("tools.call.canned", "q", func(m *nats.Msg) { m.Respond(final) }); err != nil {
		b.Fatal(err)
	}
	if _, err := wnc.QueueSubscribe("raw.echo", "raw", func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	tk := toolkit.New(nil)
	mustAdd(b, tk, echoTool())
	serve(b, wnc, tk, nil)
	wnc.Flush()
	cnc := natstest.Connect(b, s)
	c := newClient(b, cnc, nil)
	input := map[string]any{"text": text}
	var n atomic.Uint64
	req := func() []byte {
		data, err := wire.Msgpack.Marshal(&wire.Request{ID: "r" + strconv.FormatUint(n.Add(1), 36), Input: input})
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	payload := []byte(text)
	calls := map[string]func() error{
		"client/raw": func() error { _, err := cnc.Request("raw.echo", payload, guard); return err },
		"client/bus": func() error {
			if r := c.Invoke(context.Background(), toolkit.ToolCall{Name: "canned", Input: input}); r.State != toolkit.StateSuccess {
				return fmt.Errorf("%+v", r)
			}
			return nil
		},
		"worker/raw": func() error { _, err := cnc.Request("raw.echo", req(), guard); return err },
		"worker/bus": func() error { _, err := cnc.Request("tools.call.echo", req(), guard); return err },
	}
	for _, name := range []string{"client/raw", "client/bus", "worker/raw", "worker/bus"} {
		call := calls[name]
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(64 / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
