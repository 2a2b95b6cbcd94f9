package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// An ask frame's reply subject was checked only for its prefix: one
// naming tools.answer. and 8,000 more bytes had the client publish its
// answer there, a control line past the server's max_control_line, and
// the server closed the caller's connection for good, ending every call
// of the client (unavailable) on one frame of one worker. An ask whose
// reply is not tools.answer.<instance>.<token> (tokens of the sizes
// workers use) is an invalid frame, dropped unanswered.
func TestAskReplyTooLongKeepsTheConnection(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	if _, err := wnc.Subscribe(wire.CallSubject("hostile", ""), func(m *nats.Msg) {
		var req wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &req); err != nil {
			t.Error(err)
			return
		}
		for _, f := range []*wire.Frame{
			{Kind: wire.KindAsk, ID: req.ID, Seq: 1, Ask: &wire.Ask{Method: toolkit.MethodElicit, Reply: wire.AnswerSubject("w", strings.Repeat("t", 8000))}},
			{Kind: wire.KindAsk, ID: req.ID, Seq: 2, Ask: &wire.Ask{Method: toolkit.MethodElicit, Reply: wire.SubjectAnswerPrefix + ">"}},
			{Kind: wire.KindFinal, ID: req.ID, Seq: 3, Final: &toolkit.Response{ID: req.ID, State: toolkit.StateSuccess}},
		} {
			data, _ := wire.Msgpack.Marshal(f)
			wnc.Publish(m.Reply, data)
			wnc.Flush()
			time.Sleep(100 * time.Millisecond) // each ask handled before the final
		}
	}); err != nil {
		t.Fatal(err)
	}
	wnc.Flush()
	var asked atomic.Int32
	nc := natstest.Connect(t, s)
	c := newClient(t, nc, &bus.ClientOptions{Asker: func(context.Context, string, any) (any, error) {
		asked.Add(1)
		return map[string]any{"action": "decline"}, nil
	}})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hostile"}); r.State != toolkit.StateSuccess {
		t.Fatalf("final %s %s: %q (connection closed: %v, %v)", r.State, r.Code, r.Text(), nc.IsClosed(), nc.LastError())
	}
	if err := nc.Flush(); err != nil || nc.IsClosed() {
		t.Fatalf("the caller's connection: closed %v, %v", nc.IsClosed(), err)
	}
	if a := asked.Load(); a != 0 {
		t.Errorf("the Asker was asked %d times for requests with invalid reply subjects", a)
	}
}
