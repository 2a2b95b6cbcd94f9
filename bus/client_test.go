package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

func TestNoResponders(t *testing.T) {
	s := natstest.Embedded(t, false)
	c := newClient(t, natstest.Connect(t, s), nil)

	resp := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "nr-1", Name: "echo", Input: map[string]any{"text": "x"}})
	if resp.Code != toolkit.CodeUnavailable || resp.State != toolkit.StateError || resp.ID != "nr-1" {
		t.Fatalf("no worker at all: %+v, want unavailable", resp)
	}

	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	resp = c.Invoke(ctxT(t), toolkit.ToolCall{ID: "nr-2", Name: "nope"})
	if resp.Code != toolkit.CodeNotFound || resp.Text() != "ToolNotFoundError: The tool named 'nope' doesn't exist." {
		t.Fatalf("unknown tool with a fleet up: %+v, want not_found", resp)
	}
	resp = c.Invoke(ctxT(t), toolkit.ToolCall{ID: "nr-3", Name: "bad.name"})
	if resp.Code != toolkit.CodeNotFound {
		t.Fatalf("a name that is not a subject token: %+v, want not_found", resp)
	}
}

// TestCancelLatency measures cancel → ctx.Done in the tool across the bus.
func TestCancelLatency(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "inprocess", true: "tcp"}[tcp], func(t *testing.T) {
			s := natstest.Embedded(t, tcp)
			tk := toolkit.New(nil)
			started := make(chan struct{})
			doneAt := make(chan time.Time, 1)
			mustAdd(t, tk, toolkit.Func("wait", "Waits for its ctx.", func(ctx context.Context, in struct{}) (string, error) {
				started <- struct{}{}
				<-ctx.Done()
				doneAt <- time.Now()
				return "", ctx.Err()
			}))
			serve(t, natstest.Connect(t, s), tk, nil)
			c := newClient(t, natstest.Connect(t, s), nil)
			const n = 20
			var lat []time.Duration
			for i := range n {
				id := fmt.Sprintf("lat-%d", i)
				res := make(chan *toolkit.Response, 1)
				go func() { res <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "wait"}) }()
				<-started
				sent := time.Now()
				if err := c.Cancel(id); err != nil {
					t.Fatal(err)
				}
				lat = append(lat, (<-doneAt).Sub(sent))
				if r := <-res; r.Code != toolkit.CodeInterrupted {
					t.Fatalf("cancelled call: %+v", r)
				}
			}
			slices.Sort(lat)
			t.Logf("cancel → ctx.Done over %d calls: p50 %v, max %v", n, lat[n/2], lat[n-1])
		})
	}
}

// TestLostChunksReported uses a hand-written responder on the real server
// that skips a chunk frame: the client reports the loss and still
// delivers the final.
func TestLostChunksReported(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	_, err := nc.Subscribe("tools.call.lossy", func(m *nats.Msg) {
		var req wire.Request
		wire.Msgpack.Unmarshal(m.Data, &req)
		for _, f := range []*wire.Frame{
			{Kind: wire.KindChunk, Seq: 1, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "one "}}}},
			{Kind: wire.KindChunk, Seq: 3, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "three"}}}},
			{Kind: wire.KindFinal, Seq: 4, Chunks: 3, Final: &toolkit.Response{State: toolkit.StateSuccess}},
		} {
			f.ID = req.ID
			data, _ := wire.Msgpack.Marshal(f)
			m.Respond(data)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the subscription is on the server before the call
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	var chunks int
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{ID: "lossy-1", Name: "lossy"}) {
		if ev.Chunk != nil {
			chunks++
		}
		final = ev.Final
	}
	if chunks != 2 || final == nil || final.Text() != "one three" {
		t.Fatalf("chunks %d, final %+v", chunks, final)
	}
	if lost, _ := number(final.Metadata[wire.MetaLostChunks]); lost != 1 {
		t.Fatalf("metadata %v: want %s = 1", final.Metadata, wire.MetaLostChunks)
	}
}

// TestSlowConsumerIsNotWorkerLost: a caller that takes longer than the
// stall timeout over one event does not mistake its own slowness for a
// lost worker. The stall timeout is many heartbeats long, so a worker
// or a client held off the CPU for a while still counts as heard.
func TestSlowConsumerIsNotWorkerLost(t *testing.T) {
	s := natstest.Embedded(t, false)
	const stall = time.Second
	took := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("burst", "Writes a chunk, then once it was taken the rest.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		w.Write(toolkit.Text("a"))
		select { // the first chunk goes out on its own
		case <-took:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.Write(toolkit.Text("b"))
		w.Write(toolkit.Text("c"))
		return nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat, StallTimeout: stall})
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "burst"}) {
		if ev.Chunk != nil && ev.Chunk.Content[0].Text == "a" {
			close(took)
			time.Sleep(2 * stall) // the rest arrives meanwhile, unread
		}
		final = ev.Final
	}
	if final.State != toolkit.StateSuccess || final.Text() != "abc" {
		t.Fatalf("%+v", final)
	}
}

// TestCloseCancelsCalls: closing a client with a call running cancels the
// call on its worker, not only on the client.
func TestCloseCancelsCalls(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	mustAdd(t, tk, toolkit.Func("wait", "Waits for its ctx.", func(ctx context.Context, in struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return "", ctx.Err()
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "closed-1", Name: "wait"}) }()
	select {
	case <-started:
	case <-time.After(guard):
		t.Fatal("the tool never started")
	}
	c.Close()
	if r := <-done; r.Code != toolkit.CodeUnavailable {
		t.Fatalf("final after Close = %+v, want unavailable", r)
	}
	select {
	case cause := <-stopped:
		if !errors.Is(cause, toolkit.ErrCallerCancelled) {
			t.Fatalf("the tool's ctx ended with %v, want the caller's cancel", cause)
		}
	case <-time.After(guard):
		t.Fatal("the tool kept running after its client closed")
	}
}

// TestRawArgumentsOverTheBus: a model's raw arguments travel in
// raw_input, msgpack and JSON alike, and are repaired by the worker.
func TestRawArgumentsOverTheBus(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", RawInput: `{text: 'repaired',`}); r.Text() != "repaired" {
		t.Fatalf("msgpack: %s %q", r.Code, r.Text())
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", RawInput: `echo this`}); r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "recorrect the arguments") {
		t.Fatalf("broken: %s %q", r.Code, r.Text())
	}
	// JSON on the wire, as a client in another language sends it.
	nc := natstest.Connect(t, s)
	msg, err := nc.RequestMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}},
		Data: []byte(`{"id":"raw-json","raw_input":"{\"text\": \"ok\",}"}`)}, guard)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(msg.Data), `"text":"ok"`) {
		t.Fatalf("JSON reply: %s", msg.Data)
	}
}
