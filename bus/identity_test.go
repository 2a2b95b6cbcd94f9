package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestReplyOutsideInboxRefused: a request whose reply subject names a KV
// key (or any subject outside the caller's inbox) is not answered there;
// the worker logs why.
func TestReplyOutsideInboxRefused(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	var logs natstest.Buffer
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	nc := natstest.Connect(t, s)
	landed, err := nc.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "k1", Input: map[string]any{"text": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	forged := []struct{ subject, reply string }{
		{"tools.call.echo", "$KV.toolbus_permissions.s.victim"},
		{"tools.call.echo", "$KV.toolbus_groups.victim"},
		{"tools.call.echo", "tools.call.echo"},
		{"tools.call.echo.alice", "_INBOX.bob.x.y"},
		{"tools.call.echo.alice", "_INBOX.x"},
		{"tools.list", "$KV.toolbus_groups.victim"},
		{"tools.list.alice", "_INBOX.bob.x"},
		{"tools.discover", "$KV.toolbus_groups.victim"},
	}
	for _, f := range forged {
		if err := nc.PublishMsg(&nats.Msg{Subject: f.subject, Reply: f.reply, Data: body}); err != nil {
			t.Fatal(err)
		}
	}
	// A well-formed call after them: once it is answered, the forged ones
	// were handled too (one connection, in order, one worker).
	c := newClient(t, nc, nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "ok"}}); r.Text() != "ok" {
		t.Fatalf("call after the forged ones: %+v", r)
	}
	natstest.WaitFor(t, "the refusals to be logged", func() bool {
		return strings.Count(logs.String(), "outside the caller's inbox") >= 6
	})
	for {
		m, err := landed.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		for _, f := range forged {
			if m.Subject == f.reply && m.Reply == "" { // not one of the requests themselves
				t.Errorf("the worker published on the forged reply subject %s: %q", m.Subject, m.Data)
			}
		}
	}
}

// TestIdentityScopesCallsCancelsAndSessions: a caller identity's calls go
// to its own subjects and come back to its own inbox; only its own cancel
// subject cancels them; its sessions are not another identity's sessions
// of the same name.
func TestIdentityScopesCallsCancelsAndSessions(t *testing.T) {
	s := natstest.Embedded(t, false)
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	mustAdd(t, tk, echoTool())
	started := make(chan struct{}, 4)
	mustAdd(t, tk, toolkit.Func("wait", "Wait until cancelled.", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secrets."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("open_vault", "Open it.", func(ctx context.Context, _ struct{}) (string, error) { return "open", nil }), toolkit.InGroup("vault"))
	serve(t, natstest.Connect(t, s), tk, nil)

	nc := natstest.Connect(t, s)
	calls, err := nc.SubscribeSync("tools.call.>")
	if err != nil {
		t.Fatal(err)
	}
	alice := newClient(t, nc, &bus.ClientOptions{Identity: "alice"})
	bob := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Identity: "bob"})
	anon := newClient(t, natstest.Connect(t, s), nil)

	if r := alice.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}}); r.Text() != "hi" {
		t.Fatalf("alice's echo: %+v", r)
	}
	m, err := calls.NextMsg(guard)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "tools.call.echo.alice" || !strings.HasPrefix(m.Reply, "_INBOX.alice.") {
		t.Fatalf("alice's call went to %s replying on %s", m.Subject, m.Reply)
	}

	// Cancels: bob's and the anonymous cancel of the same id miss it.
	done := make(chan *toolkit.Response, 1)
	go func() { done <- alice.Invoke(ctxT(t), toolkit.ToolCall{ID: "k1", Name: "wait"}) }()
	<-started
	if err := bob.Cancel("k1"); err != nil {
		t.Fatal(err)
	}
	if err := anon.Cancel("k1"); err != nil {
		t.Fatal(err)
	}
	// Round trips behind the cancels: they have reached the worker.
	bob.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}})
	anon.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}})
	select {
	case r := <-done:
		t.Fatalf("a foreign cancel ended alice's call: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	if err := alice.Cancel("k1"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("alice's own cancel: %+v", r)
	}

	// Sessions: alice opens the vault in "s"; bob's "s" and the anonymous
	// "s" are other sessions.
	if r := alice.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}}); r.Code != "" {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	if r := alice.Invoke(ctxT(t), toolkit.ToolCall{Name: "open_vault", Session: "s"}); r.Text() != "open" {
		t.Fatalf("alice in her session: %+v", r)
	}
	for who, c := range map[string]*bus.Client{"bob": bob, "anonymous": anon} {
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "open_vault", Session: "s"}); r.Code != toolkit.CodeGroupInactive {
			t.Errorf("%s used alice's session: %+v", who, r)
		}
		active, err := c.ActiveGroups(ctxT(t), "s", 0)
		if err != nil || len(active) != 0 {
			t.Errorf("%s sees the groups %v (%v) of alice's session", who, active, err)
		}
	}
	if active, err := alice.ActiveGroups(ctxT(t), "s", 0); err != nil || len(active) != 1 || active[0] != "vault" {
		t.Errorf("alice's own groups: %v, %v", active, err)
	}
	// An anonymous session name cannot reach into the identities' space.
	if r := anon.Invoke(ctxT(t), toolkit.ToolCall{Name: "open_vault", Session: "\x00alice\x00s"}); r.Code != toolkit.CodeInvalidInput {
		t.Errorf("a forged scoped session: %+v", r)
	}
}

// TestInvalidIdentityRefused: a call whose subject names an identity an
// identity may not be ("a/b": a subject token, not a name) is answered
// invalid_input and not run.
func TestInvalidIdentityRefused(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	ran := make(chan struct{}, 1)
	mustAdd(t, tk, toolkit.Func("touch", "Runs.", func(ctx context.Context, in struct{}) (string, error) {
		ran <- struct{}{}
		return "ran", nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "c1", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	reply := wire.InboxPrefix + "a/b.r1" // the identity's inbox, as the worker requires
	sub, err := nc.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest(wire.CallSubject("touch", "a/b"), reply, data); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(guard)
	if err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil || f.Final == nil {
		t.Fatalf("%v %+v", err, f)
	}
	if f.Final.Code != toolkit.CodeInvalidInput || !strings.Contains(f.Final.Text(), "identity") {
		t.Fatalf("final %s %q", f.Final.Code, f.Final.Text())
	}
	select {
	case <-ran:
		t.Fatal("the call ran")
	default:
	}
}

// TestListForgedScopedSessionRefused: a list request's session name, as
// a call's, cannot reach into the identities' space: an anonymous list
// of "\x00alice\x00s" is refused, not answered with the schemas of
// alice's session "s".
func TestListForgedScopedSessionRefused(t *testing.T) {
	s := natstest.Embedded(t, false)
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	mustAdd(t, tk, echoTool())
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secrets."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("open_vault", "Open it.", func(ctx context.Context, _ struct{}) (string, error) { return "open", nil }), toolkit.InGroup("vault"))
	serve(t, natstest.Connect(t, s), tk, nil)
	alice := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Identity: "alice"})
	anon := newClient(t, natstest.Connect(t, s), nil)
	if r := alice.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}}); r.Code != "" {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	reply, err := anon.List(ctxT(t), "\x00alice\x00s")
	if err == nil {
		for _, sc := range reply.Schemas {
			if sc.Function.Name == "open_vault" {
				t.Fatalf("an anonymous list of a forged scoped session shows alice's active group: %+v", reply)
			}
		}
	}
	if err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("the list of a forged scoped session is not refused: %+v, %v", reply, err)
	}
}
