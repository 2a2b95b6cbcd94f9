package bus

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// The input-memory tests' fixture: a worker of 4 MiB input memory (the
// test serves it), half of it held by a running call of 1 MB (holdText)
// of the tool "hold", and a caller of the wire contract whose call of 1 MB
// then waits for the rest.

// holdText is the 1 MB input of the holding call and of the waiting one.
var holdText = strings.Repeat("x", 1_000_000)

// addHold adds "hold" to tk: each call says it started and runs until
// free (called at the test's end at the latest).
func addHold(t *testing.T, tk *toolkit.Toolkit) (started <-chan struct{}, free func()) {
	t.Helper()
	start := make(chan struct{}, 2)
	release := make(chan struct{})
	if err := tk.Add(toolkit.Func("hold", "Holds until released.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (int, error) {
		start <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return len(in.Text), nil
	})); err != nil {
		t.Fatal(err)
	}
	var released sync.Once
	free = func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the worker's stop, which waits for the calls
	return start, free
}

// holdHalf calls hold with holdText from a client of its own and returns
// once the call runs, with where its final will come.
func holdHalf(t *testing.T, s *embedded.Server, started <-chan struct{}) <-chan *toolkit.Response {
	t.Helper()
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{StallTimeout: natstest.Guard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	first := make(chan *toolkit.Response, 1)
	go func() {
		first <- c.Invoke(t.Context(), toolkit.ToolCall{ID: "first", Name: "hold", Input: map[string]any{"text": holdText}})
	}()
	select {
	case <-started:
	case <-time.After(natstest.Guard):
		t.Fatal("the first call never started")
	}
	return first
}

// callWaiting publishes a call "waiting" of tool with holdText, with
// headers h, as a caller of the wire contract, and returns a reader of
// its frames.
func callWaiting(t *testing.T, s *embedded.Server, tool string, h nats.Header) (next func() wire.Frame) {
	t.Helper()
	nc := natstest.Connect(t, s)
	inbox := wire.Inbox("") + "waiting"
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "waiting", Input: map[string]any{"text": holdText}})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject(tool, ""), Reply: inbox, Header: h, Data: data}); err != nil {
		t.Fatal(err)
	}
	return func() wire.Frame {
		t.Helper()
		m, err := sub.NextMsg(natstest.Guard)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
}
