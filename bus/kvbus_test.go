package bus

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGroupActivationAcrossWorkersKV: two workers on different nodes of a
// 3-node cluster, each with its own KVState on its own connection. A
// session activates a group through whichever worker gets reset_tools;
// every later call of that session, on either worker, honours it at once,
// and so does a deactivation. The client sits on a third node.
func TestGroupActivationAcrossWorkersKV(t *testing.T) {
	nodes := natstest.Cluster(t)
	ctx := natstest.Ctx(t)
	served := map[string]int{}
	for i, node := range nodes[:2] {
		nc := natstest.URLConn(t, node.ClientURL())
		state, err := NewKVState(ctx, natstest.JS(t, nc), &KVStateOptions{Replicas: 3, Storage: jetstream.MemoryStorage})
		if err != nil {
			t.Fatal(err)
		}
		tk := toolkit.New(&toolkit.Options{State: state})
		if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
			t.Fatal(err)
		}
		if err := tk.Add(toolkit.Func("secret", "Secret.", func(context.Context, struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault")); err != nil {
			t.Fatal(err)
		}
		w, err := Serve(nc, tk, &WorkerOptions{Instance: fmt.Sprintf("w%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Stop(context.Background()) })
	}
	c, err := NewClient(natstest.URLConn(t, nodes[2].ClientURL()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	call := func(id, name string, input map[string]any) *toolkit.Response {
		return c.Invoke(ctx, toolkit.ToolCall{ID: id, Name: name, Session: "sess/1", Input: input})
	}
	if r := call("before", "secret", nil); r.Code != toolkit.CodeGroupInactive {
		t.Fatalf("before activation: %+v", r)
	}
	for round := range 10 {
		if r := call(fmt.Sprintf("on-%d", round), toolkit.MetaToolName, map[string]any{"vault": true}); r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools on: %+v", r)
		}
		for i := range 4 {
			r := call(fmt.Sprintf("use-%d-%d", round, i), "secret", nil)
			if r.State != toolkit.StateSuccess || r.Text() != "s3cret" {
				t.Fatalf("round %d call %d right after activation: %+v", round, i, r)
			}
			served[r.Metadata[wire.MetaWorker].(string)]++
		}
		if r := call(fmt.Sprintf("off-%d", round), toolkit.MetaToolName, map[string]any{}); r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools off: %+v", r)
		}
		for i := range 2 {
			if r := call(fmt.Sprintf("gone-%d-%d", round, i), "secret", nil); r.Code != toolkit.CodeGroupInactive {
				t.Fatalf("round %d call %d right after deactivation: %+v", round, i, r)
			}
		}
	}
	if len(served) != 2 {
		t.Fatalf("calls were served by %v; want both workers", served)
	}
	t.Logf("group calls served: %v", served)
}
