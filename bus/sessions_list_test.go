package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionsListsPastABadGroupsValue: a session whose stored groups are
// not a JSON array (written by hand, `nats kv put`) is listed with the
// error; the other sessions are listed as usual. One bad value made the
// whole listing (toolctl sessions) fail.
func TestSessionsListsPastABadGroupsValue(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	state, err := bus.NewKVState(ctxT(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web tools."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("touch", "Keep state here.", func(context.Context, struct{}) (string, error) { return "ok", nil }), toolkit.SessionBound())
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1", Sessions: &bus.SessionsOptions{JetStream: js}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(ctxT(t)) })

	c := newClient(t, natstest.Connect(t, s), nil)
	for _, session := range []string{"good", "bad"} {
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"web": true}}); r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools %s: %+v", session, r)
		}
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "touch", Session: session}); r.Text() != "ok" {
			t.Fatalf("touch %s: %+v", session, r)
		}
	}
	b, err := js.KeyValue(ctxT(t), wire.BucketGroups)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutString(ctxT(t), "bad", "not json"); err != nil {
		t.Fatal(err)
	}

	pins, err := c.Sessions(ctxT(t))
	if err != nil {
		t.Fatalf("one bad value failed the listing: %v", err)
	}
	got := map[string]bus.SessionPin{}
	for _, p := range pins {
		got[p.Session] = p
	}
	if len(pins) != 2 || got["good"].Worker != "w1" || got["bad"].Worker != "w1" {
		t.Fatalf("sessions: %+v", pins)
	}
	if g := got["good"]; len(g.Groups) != 1 || g.Groups[0] != "web" || g.GroupsErr != nil {
		t.Fatalf("good session: %+v", g)
	}
	if g := got["bad"]; g.Groups != nil || g.GroupsErr == nil {
		t.Fatalf("bad session: %+v", g)
	}
}

// TestSessionPinKeptWhileCallRuns: a session-bound call that runs longer
// than the sessions TTL keeps its session's pin: the worker renews it
// while the call runs. The pin was renewed only when a call started, so
// it expired under a long call and the session's next call, reaching
// another worker, claimed it there: the session's state stayed behind
// with the running call, and nothing said it moved.
func TestSessionPinKeptWhileCallRuns(t *testing.T) {
	const ttl = 2 * time.Second
	s := natstest.Embedded(t, false)
	started, release := make(chan struct{}), make(chan struct{})
	holdWorker := func(instance string) {
		tk := storeToolkit(t)
		schema := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}
		mustAdd(t, tk, toolkit.Raw("hold", "Run until released.", schema, func(ctx context.Context, _ *toolkit.Call, w toolkit.Writer) error {
			started <- struct{}{}
			select {
			case <-release:
				return w.Write(toolkit.Text("released"))
			case <-ctx.Done():
				return ctx.Err()
			}
		}), toolkit.SessionBound())
		nc := natstest.Connect(t, s)
		serve(t, nc, tk, &bus.WorkerOptions{Instance: instance,
			Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc), TTL: ttl}})
	}
	holdWorker("w1")
	holdWorker("w2")
	nc := natstest.Connect(t, s)
	b, err := natstest.JS(t, nc).KeyValue(ctxT(t), wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan []rvFrame, 1)
	go func() {
		done <- rvCall(t, nc, wire.PinnedSubject("w1", "hold", ""), nil, "s", "", time.Minute)
	}()
	select {
	case <-started:
	case frames := <-done:
		t.Fatalf("hold ended at once: %+v", frames)
	}
	e0, err := b.Get(ctxT(t), "s")
	if err != nil || string(e0.Value()) != "w1" {
		t.Fatalf("the pin while hold runs: %v, %v", e0, err)
	}
	// Until the pin as it was claimed is gone from the bucket: expired,
	// or replaced by a renewal.
	st, err := natstest.JS(t, nc).Stream(ctxT(t), "KV_"+wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the claimed pin to be replaced or expire", func() bool {
		_, err := st.GetMsg(context.Background(), e0.Revision())
		return errors.Is(err, jetstream.ErrMsgNotFound)
	})
	// The session's next call reaches w2 (as from the queue group).
	f := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w2", "put", ""), nil, "s", "v", 10*time.Second))
	close(release)
	if f.meta(wire.MetaSessionWorker) != "w1" || f.meta(wire.MetaWorker) != "w1" {
		t.Fatalf("while w1 runs a call of session s, w2 took it: %+v", f.Final)
	}
	if f := rvFinal(t, <-done); f.text() != "released" {
		t.Fatalf("hold: %+v", f.Final)
	}
}
