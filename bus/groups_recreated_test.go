package bus_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// recreatedBucket serves the tool secret (group vault) from a worker on
// a KV group state, lets sessions a, b and c activate vault through a
// client at revisions well past the first ones, then deletes the groups
// bucket and makes it again (nats kv rm and add), so that its revisions
// count from 1 again.
func recreatedBucket(t *testing.T) (*bus.Client, jetstream.JetStream) {
	t.Helper()
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	ctx := ctxT(t)
	// The worker waits this long for a revision before it answers
	// unavailable (when the call has no deadline); short, to keep a
	// failing call short. It is no deadline of the test.
	state, err := bus.NewKVState(ctx, js, &bus.KVStateOptions{MaxWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("secret", "Secret.", func(ctx context.Context, in struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault"))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "A"})
	c := newClient(t, natstest.Connect(t, s), nil)
	for i := range 8 { // the old bucket's revisions go well past the new one's
		resetVault(t, c, "other-"+strconv.Itoa(i))
	}
	for _, session := range []string{"a", "b", "c"} {
		if resetVault(t, c, session) == 0 {
			t.Fatalf("no revision remembered for %s", session)
		}
	}
	if err := js.DeleteKeyValue(ctx, wire.BucketGroups); err != nil {
		t.Fatal(err)
	}
	natstest.CreateAfterDelete(ctx, t, func() error {
		_, err := js.CreateKeyValue(ctx, bus.GroupsBucketConfig(nil))
		return err
	})
	return c, js
}

// resetVault activates the group vault for session and returns the
// revision the client remembers then.
func resetVault(t *testing.T, c *bus.Client, session string) uint64 {
	t.Helper()
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"vault": true}})
	if r.State != toolkit.StateSuccess {
		t.Fatalf("reset_tools of %s: %s %s", session, r.Code, r.Text())
	}
	return c.Revision(session)
}

// TestGroupsRevisionBucketRecreated: after the groups bucket was made
// again, the client forgets the revisions it remembered from the old one
// instead of sending them with the sessions' calls and list requests,
// which then waited for a revision the new bucket had not reached and
// failed (GroupStateError), call after call.
func TestGroupsRevisionBucketRecreated(t *testing.T) {
	c, _ := recreatedBucket(t)
	// Session a's first call carries the old revision, which the worker
	// cannot reach: it may fail, and the client then forgets the
	// revisions the new bucket has not reached. Without a deadline the
	// worker waits for the revision for its MaxWait, not for the test's
	// guard.
	r := c.Invoke(context.Background(), toolkit.ToolCall{Name: "secret", Session: "a"})
	t.Logf("first call after the bucket was made again: %s %s", r.Code, r.Text())
	for _, session := range []string{"a", "b", "c"} {
		if rev := c.Revision(session); rev != 0 {
			t.Fatalf("session %s: the client still sends revision %d of the deleted bucket", session, rev)
		}
	}
	// The sessions' state went with the bucket: their groups are the
	// defaults again, answered at once.
	ctx := ctxT(t)
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "secret", Session: "a"}); r.Code != toolkit.CodeGroupInactive {
		t.Fatalf("session a after the bucket was made again: %s %s", r.Code, r.Text())
	}
	if _, err := c.List(ctx, "b"); err != nil {
		t.Fatalf("listing session b after the bucket was made again: %v", err)
	}
}

// TestGroupsRevisionListBucketRecreated: a list request is the first to
// carry an old bucket's revision; it fails, the client forgets the
// revision and asks again.
func TestGroupsRevisionListBucketRecreated(t *testing.T) {
	c, _ := recreatedBucket(t)
	// The worker gives the first request's state read 10s; the guard
	// leaves time for the second.
	if _, err := c.List(ctxT(t), "b"); err != nil {
		t.Fatalf("listing session b after the bucket was made again: %v", err)
	}
	if rev := c.Revision("b"); rev != 0 {
		t.Fatalf("session b: the client still sends revision %d of the deleted bucket", rev)
	}
}

// TestGroupsRevisionResetBucketRecreated: a session's reset_tools into the
// new bucket returns a revision lower than the one the client remembered;
// that lower one is the one the session's calls carry now, and the other
// sessions' revisions of the old bucket are forgotten.
func TestGroupsRevisionResetBucketRecreated(t *testing.T) {
	c, _ := recreatedBucket(t)
	if got := resetVault(t, c, "c"); got == 0 || got > 3 {
		t.Fatalf("session c: revision %d remembered after reset_tools into the new bucket", got)
	}
	ctx := ctxT(t)
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "secret", Session: "c"}); r.State != toolkit.StateSuccess {
		t.Fatalf("session c after reset_tools into the new bucket: %s %s", r.Code, r.Text())
	}
	if rev := c.Revision("a"); rev != 0 {
		t.Fatalf("session a: the client still sends revision %d of the deleted bucket", rev)
	}
}

// TestToolUnavailableAsksNothing: a tool's own unavailable final, for a
// session with a remembered revision, is handed over without a question
// to the groups bucket's stream leader (that question is for a worker's
// GroupStateError only) and leaves the revision as it was.
func TestToolUnavailableAsksNothing(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	state, err := bus.NewKVState(ctxT(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("secret", "Secret.", func(ctx context.Context, in struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault"))
	mustAdd(t, tk, toolkit.Func("flaky", "Fails.", func(ctx context.Context, in struct{}) (string, error) {
		return "", toolkit.Errorf(toolkit.CodeUnavailable, "BackendError: the backend is down.")
	}))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "A"})
	c := newClient(t, natstest.Connect(t, s), nil)
	rev := resetVault(t, c, "a")
	asked, err := nc.SubscribeSync("$JS.API.STREAM.INFO.KV_" + wire.BucketGroups)
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "flaky", Session: "a", Input: map[string]any{}})
	if r.Code != toolkit.CodeUnavailable {
		t.Fatalf("flaky: %s %s %q", r.State, r.Code, r.Text())
	}
	// A question sent before the final was handed over is here by now:
	// the client's connection sent it before returning.
	if m, err := asked.NextMsg(500 * time.Millisecond); err == nil {
		t.Fatalf("the client asked %s after a tool's unavailable final", m.Subject)
	}
	if got := c.Revision("a"); got != rev {
		t.Fatalf("revision %d after a tool's unavailable final, want %d", got, rev)
	}
}
