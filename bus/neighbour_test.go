package bus_test

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

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

// listWithRevision publishes a list request of identity naming the groups
// revision rev, with reply subject reply.
func listWithRevision(t *testing.T, nc *nats.Conn, identity, reply string, rev uint64) {
	t.Helper()
	m := &nats.Msg{Subject: wire.ListSubject(identity), Reply: reply, Header: nats.Header{wire.HeaderGroupsRevision: {strconv.FormatUint(rev, 10)}}}
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
}

// groupsWorker serves echo with group state in a KV bucket and returns
// that state.
func groupsWorker(t *testing.T, s *embedded.Server) *bus.KVState {
	t.Helper()
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	return state
}

// TestListFarRevisionAnsweredAtOnce: a list request naming a groups
// revision far past the bucket's last one (any caller may name any) is
// answered at once with an error naming both, not after waiting for it.
func TestListFarRevisionAnsweredAtOnce(t *testing.T) {
	s := natstest.Embedded(t, false)
	state := groupsWorker(t, s)
	rev, err := state.Store(ctxT(t), "sess", []string{})
	if err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, s)
	sub, err := nc.SubscribeSync("_INBOX.alice.>")
	if err != nil {
		t.Fatal(err)
	}
	listWithRevision(t, nc, "alice", "_INBOX.alice.far", math.MaxUint64)
	m, err := sub.NextMsgWithContext(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var lr wire.ListReply
	if err := wire.Msgpack.Unmarshal(m.Data, &lr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lr.Error, strconv.FormatUint(math.MaxUint64, 10)) || !strings.Contains(lr.Error, "last revision "+strconv.FormatUint(rev, 10)) {
		t.Fatalf("list naming revision %d: %+v; want an error naming it and the bucket's last revision %d", uint64(math.MaxUint64), lr, rev)
	}
}

// TestSlowListSparesOtherCallers: a list request naming a groups revision
// just past the bucket's last one waits for it (bus.RevisionWait); a
// caller sending such requests (which its role allows, on its own
// tools.list.<identity>) must not hold up another caller's listing behind
// them. Before, the worker answered list requests one at a time, so bob's
// request was answered only after each of alice's had given up.
func TestSlowListSparesOtherCallers(t *testing.T) {
	s := natstest.Embedded(t, false)
	state := groupsWorker(t, s)
	rev, err := state.Store(ctxT(t), "sess", []string{})
	if err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, s)
	replies := make(chan *nats.Msg, 16)
	for _, inbox := range []string{"_INBOX.alice.>", "_INBOX.bob.>"} {
		if _, err := nc.ChanSubscribe(inbox, replies); err != nil {
			t.Fatal(err)
		}
	}
	const slow = 4
	for i := range slow {
		listWithRevision(t, nc, "alice", "_INBOX.alice.slow"+strconv.Itoa(i), rev+1)
	}
	if err := nc.PublishRequest(wire.ListSubject("bob"), "_INBOX.bob.quick", nil); err != nil {
		t.Fatal(err)
	}
	// alice's are answered one after the other, each after waiting for
	// its revision; bob's, at the latest, before her last.
	for alice := 0; ; {
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
			if !strings.Contains(lr.Error, "revision "+strconv.FormatUint(rev+1, 10)+" not reached") {
				t.Fatalf("alice's listing: %+v", lr)
			}
			if alice++; alice == slow {
				t.Fatalf("all %d of alice's slow list requests were answered before bob's", slow)
			}
			continue
		}
		if lr.Error != "" || !slices.Contains(lr.Tools, "echo") {
			t.Fatalf("bob's listing: %+v", lr)
		}
		break
	}
}

// TestGroupToolFarRevisionAnsweredAtOnce: a call of a grouped tool naming
// a groups revision far past the bucket's last one, with a deadline far
// away, ends unavailable at once, naming both revisions; before, the
// worker polled the bucket every 50 ms until that deadline.
func TestGroupToolFarRevisionAnsweredAtOnce(t *testing.T) {
	s := natstest.Embedded(t, false)
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web tools.", Active: true}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, echoTool(), toolkit.InGroup("web"))
	serve(t, natstest.Connect(t, s), tk, nil)
	rev, err := state.Store(ctxT(t), "sess", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), nil)
	ctx, cancel := context.WithTimeout(ctxT(t), time.Hour) // the guard ends it first
	defer cancel()
	r := c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Session: "sess", GroupsRevision: math.MaxUint64, Input: map[string]any{"text": "hi"}})
	if r.Code != toolkit.CodeUnavailable || !strings.Contains(r.Text(), strconv.FormatUint(math.MaxUint64, 10)) ||
		!strings.Contains(r.Text(), "last revision "+strconv.FormatUint(rev, 10)) {
		t.Fatalf("call naming revision %d: %s %s %q; want unavailable naming it and the bucket's last revision %d", uint64(math.MaxUint64), r.State, r.Code, r.Text(), rev)
	}
}
