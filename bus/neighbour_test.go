package bus_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSlowListSparesOtherCallers: a list request naming a groups revision
// the bucket never reaches waits for it (up to 10 s), as the contract says;
// a caller sending such requests (which its role allows, on its own
// tools.list.<identity>) must not hold up another caller's listing behind
// it. Before, the worker answered list requests one at a time on its
// subscription, so bob's request was answered only after alice's gave up
// (10 s each). Now each is answered on a goroutine of its own, at most 4
// of one caller at once.
func TestSlowListSparesOtherCallers(t *testing.T) {
	s := natstest.Embedded(t, false)
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)

	nc := natstest.Connect(t, s)
	replies := make(chan *nats.Msg, 16)
	for _, inbox := range []string{"_INBOX.alice.>", "_INBOX.bob.>"} {
		if _, err := nc.ChanSubscribe(inbox, replies); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 {
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.ListSubject("alice"), Reply: "_INBOX.alice.slow" + string(rune('a'+i)),
			Header: nats.Header{wire.HeaderGroupsRevision: {"18446744073709551615"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.PublishRequest(wire.ListSubject("bob"), "_INBOX.bob.quick", nil); err != nil {
		t.Fatal(err)
	}
	// alice's requests past the bound are answered at once (busy); the
	// others wait for their revision, and bob's must not wait behind them.
	busy := 0
	for {
		var m *nats.Msg
		select {
		case m = <-replies:
		case <-ctxT(t).Done():
			t.Fatal("no list answer")
		}
		var lr wire.ListReply
		if err := wire.Msgpack.Unmarshal(m.Data, &lr); err != nil {
			t.Fatal(err)
		}
		if m.Subject != "_INBOX.bob.quick" {
			if !strings.HasPrefix(lr.Error, "BusyError") {
				t.Fatalf("alice's listing answered before bob's: %+v", lr)
			}
			busy++
			continue
		}
		if lr.Error != "" || len(lr.Tools) == 0 {
			t.Fatalf("bob's listing: %+v", lr)
		}
		break
	}
	if busy != 4 {
		t.Errorf("%d of alice's 8 list requests were answered busy, want the 4 past the bound", busy)
	}
}

// TestForgedAnswersDroppedUnread: any caller may publish on
// tools.answer.<instance>.*, so answers with tokens nobody waits for are
// dropped before they are decoded. Before, each was decoded first (up to
// 16 times its size plus 64 KiB) and an undecodable one logged a warning:
// a caller's flood cost every worker decoding and a log line per message.
func TestForgedAnswersDroppedUnread(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, askTool())
	var logs natstest.Buffer
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	nc := natstest.Connect(t, s)
	c := newClient(t, nc, &bus.ClientOptions{Asker: func(ctx context.Context, method string, params any) (any, error) {
		// Published before the client's answer on the same connection, so
		// the worker has handled them when the tool hears the answer.
		for i := range 100 {
			if err := nc.Publish(wire.AnswerSubject("w1", "forged"+strconv.Itoa(i)), []byte{0xc1}); err != nil {
				return nil, err
			}
		}
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "greet"}); r.Text() != "accept, Ada" {
		t.Fatalf("the call: %+v", r)
	}
	if n := strings.Count(logs.String(), "undecodable answer"); n > 0 {
		t.Fatalf("the worker decoded (and logged) %d answers nobody waited for", n)
	}
}
