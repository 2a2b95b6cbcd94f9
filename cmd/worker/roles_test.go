package main_test

// The trust boundary between the roles `toolctl auth init` writes, against
// the worker's embedded server running them: each role's documented
// operations work under its permissions, on raw connections as a client in
// another language would make them (subjects.md), and what it may not do
// the server refuses.

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// request sends an empty request on nc and fails the test on an error
// (a permission violation of the reply included: the request then times
// out).
func request(ctx context.Context, t *testing.T, nc *nats.Conn, subject string, body []byte) *nats.Msg {
	t.Helper()
	m, err := nc.RequestWithContext(ctx, subject, body)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	return m
}

// refused publishes on subject from nc and waits for the server to refuse
// it.
func refused(t *testing.T, nc *nats.Conn, v *violations, what, subject string) {
	t.Helper()
	// With a reply subject, as a request: a get is refused as one.
	if err := nc.PublishRequest(subject, nc.NewRespInbox(), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	v.wait(t, what, subject)
}

// TestRolesCallerKeptResult: a caller reads its own kept result with the
// direct get subjects.md documents, on a connection of the caller role
// (its replies under its inbox); another caller's direct get of the same
// key is refused by the server.
func TestRolesCallerKeptResult(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, anc, _ := f.caller(t, "alice")
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "kept-1", Name: "echo", Input: map[string]any{"text": "alice's"}, KeepResult: true}); r.Text() != "alice's" {
		t.Fatalf("alice's kept call: %+v", r)
	}
	get := "$JS.API.DIRECT.GET.KV_" + wire.BucketResults + ".$KV." + wire.BucketResults + "."
	m := request(ctx, t, anc, get+wire.ResultKey("alice", "kept-1"), nil)
	if s := m.Header.Get("Status"); s != "" {
		t.Fatalf("alice's direct get of her kept result: status %s %s", s, m.Header.Get("Description"))
	}
	var frame wire.Frame
	if err := wire.Msgpack.Unmarshal(m.Data, &frame); err != nil || frame.Kind != wire.KindFinal || frame.ID != "kept-1" || frame.Seq != 1 ||
		frame.Final == nil || frame.Final.Text() != "alice's" || frame.Final.Metadata[wire.MetaWorker] != "secure-w" {
		t.Fatalf("alice's kept result: %v, %+v", err, frame)
	}
	m = request(ctx, t, anc, get+wire.ResultKey("alice", "never-called"), nil)
	if m.Header.Get("Status") != "404" || len(m.Data) != 0 {
		t.Errorf("an id of alice's with nothing kept: status %q, body %q", m.Header.Get("Status"), m.Data)
	}

	_, bnc, bv := f.caller(t, "bob")
	stolen := get + wire.ResultKey("alice", "kept-1")
	refused(t, bnc, bv, "bob's direct get of alice's kept result", stolen)
	// Nor by the other ways JetStream offers: the stream's get, a
	// consumer of the bucket.
	refused(t, bnc, bv, "bob's stream get on the results", "$JS.API.STREAM.MSG.GET.KV_"+wire.BucketResults)
	refused(t, bnc, bv, "bob's consumer of the results", "$JS.API.CONSUMER.CREATE.KV_"+wire.BucketResults+".x.$KV."+wire.BucketResults+".alice.>")
	if r := alice.Result(ctx, "kept-1"); r.Text() != "alice's" {
		t.Errorf("alice's kept result through the client after bob's tries: %s %s", r.Code, r.Text())
	}
}

// TestRolesCaller: every operation subjects.md gives a caller works on a
// raw connection of its role, and what belongs to another identity, to
// the workers or to the operator is refused.
func TestRolesCaller(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, anc, av := f.caller(t, "alice")
	// The worker role may bind the exhausted stream: the worker takes the
	// calls stream's max-deliveries advisories from it, also those
	// published while it was down.
	if strings.Contains(f.proc.stderr.String(), "without the exhausted stream") {
		t.Errorf("the worker could not bind the exhausted stream:\n%s", f.proc.stderr)
	}

	// Announcements, and a discover request answered by the worker.
	ann, err := anc.SubscribeSync(wire.SubjectAnnouncePrefix + "*")
	if err != nil {
		t.Fatal(err)
	}
	disc := request(ctx, t, anc, wire.SubjectDiscover, nil)
	var a struct {
		Instance string `msgpack:"instance"`
	}
	if err := msgpack.Unmarshal(disc.Data, &a); err != nil || a.Instance != "secure-w" {
		t.Errorf("discover answer: %v, %+v", err, a)
	}
	if m, err := ann.NextMsgWithContext(ctx); err != nil || !strings.HasPrefix(m.Subject, wire.SubjectAnnouncePrefix) {
		t.Errorf("an announcement: %v", err)
	}

	// Its listing, on its own subject.
	var list wire.ListReply
	if err := wire.Msgpack.Unmarshal(request(ctx, t, anc, wire.ListSubject("alice"), nil).Data, &list); err != nil || !strings.Contains(strings.Join(list.Tools, " "), "echo") {
		t.Errorf("alice's tools.list: %v, %+v", err, list)
	}

	// A call, raw: the frames come into its inbox.
	body := mustMsgpack(t, &wire.Request{ID: "raw-1", Input: map[string]any{"text": "raw"}})
	m := request(ctx, t, anc, wire.CallSubject("echo", "alice"), body)
	var frame wire.Frame
	if err := wire.Msgpack.Unmarshal(m.Data, &frame); err != nil || frame.Final == nil || frame.Final.Text() != "raw" {
		t.Errorf("alice's raw call: %v, %+v", err, frame)
	}

	// Whether a worker takes a tool's durable calls, and a durable call
	// published raw, its acknowledgement in its inbox.
	info := request(ctx, t, anc, "$JS.API.CONSUMER.INFO."+wire.StreamCalls+".echo", nil)
	if !strings.Contains(string(info.Data), `"name":"echo"`) {
		t.Errorf("the echo consumer's info: %s", info.Data)
	}
	reply := anc.NewRespInbox()
	frames, err := anc.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	dm := nats.NewMsg(wire.DurableSubject("echo", "alice"))
	dm.Header.Set(wire.HeaderReply, reply)
	dm.Header.Set("Nats-Msg-Id", wire.ResultKey("alice", "dur-1"))
	dm.Data = mustMsgpack(t, &wire.Request{ID: "dur-1", Input: map[string]any{"text": "durable"}})
	ack, err := anc.RequestMsgWithContext(ctx, dm)
	if err != nil || !strings.Contains(string(ack.Data), `"stream":"`+wire.StreamCalls+`"`) {
		t.Fatalf("alice's durable publish: %v, %s", err, ack.Data)
	}
	for {
		fm, err := frames.NextMsgWithContext(ctx)
		if err != nil {
			t.Fatalf("alice's durable call: %v", err)
		}
		var fr wire.Frame
		if err := wire.Msgpack.Unmarshal(fm.Data, &fr); err != nil {
			t.Fatal(err)
		}
		if fr.Kind == wire.KindFinal {
			if fr.Final.Text() != "durable" {
				t.Errorf("alice's durable final: %+v", fr.Final)
			}
			break
		}
	}

	// Recording a cancel in the cancels stream: JetStream acknowledges it.
	ack = request(ctx, t, anc, wire.CancelledSubject("alice", "gone-1"), nil)
	if !strings.Contains(string(ack.Data), `"stream":"`+wire.StreamCancels+`"`) {
		t.Errorf("alice's cancel record: %s", ack.Data)
	}

	// Her session's groups: reset_tools, then read back from the bucket.
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	// A direct get of her key: she may not bind the bucket as jetstream's
	// KeyValue does (its stream information names every key).
	js, err := jetstream.New(anc)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := wire.SessionKey(toolkit.SessionScope("alice", "s"))
	if e, err := kv.Get(ctx, js, wire.BucketGroups, key); err != nil || string(e.Value) != `{"key":"`+key+`","groups":["vault"]}` {
		t.Errorf("alice's groups read back: %v", err)
	}
	if groups, err := alice.ActiveGroups(ctx, "s", alice.Revision("s")); err != nil || len(groups) != 1 {
		t.Errorf("alice's active groups: %v, %v", groups, err)
	}
	if schemas, err := alice.SessionSchemas(ctx, "s", alice.Revision("s")); err != nil || len(schemas) == 0 {
		t.Errorf("alice's session schemas: %v, %v", schemas, err)
	}

	// Not hers: another identity's subjects, anonymous ones, the
	// workers' and the operator's.
	for _, s := range []string{
		wire.CallSubject("echo", "bob"),
		wire.CallSubject("echo", ""),
		wire.CancelSubject("bob", "x"),
		wire.CancelledSubject("bob", "x"),
		wire.CancelledSubject("", "x"),
		wire.DurableSubject("echo", "bob"),
		wire.DurableSubject("echo", ""),
		wire.ListSubject("bob"),
		wire.SubjectList,
		wire.PinnedSubject("secure-w", "echo", "bob"),
		"_INBOX.bob.x.y",
		"_INBOX.x.y",
		wire.SubjectAnnouncePrefix + "secure-w",
		wire.MCPSubject("secure-w"),
		wire.SubjectControlPrefix + "secure-w.mcp_headers",
		"$KV." + wire.BucketGroups + "." + key,
		"$KV." + wire.BucketResults + "." + wire.ResultKey("alice", "kept"),
		"$KV." + wire.BucketApprovals + ".approval." + key + ".c1",
		"$KV." + wire.BucketPermissions + ".s." + key,
		"$JS.API.DIRECT.GET.KV_" + wire.BucketOAuth + ".$KV." + wire.BucketOAuth + ".srv",
		"$JS.API.DIRECT.GET." + wire.StreamCancels + "." + wire.CancelledSubject("bob", "x"),
		"$JS.API.DIRECT.GET." + wire.StreamCancels + "." + wire.CancelledSubject("alice", "x"),
		"$JS.API.DIRECT.GET.KV_" + wire.BucketApprovals + ".$KV." + wire.BucketApprovals + ".pending." + key + ".c1",
		"$JS.API.CONSUMER.CREATE." + wire.StreamCalls + ".echo",
		"$JS.API.CONSUMER.MSG.NEXT." + wire.StreamCalls + ".echo",
		"$JS.API.STREAM.CREATE.x",
		"$JS.API.STREAM.DELETE.KV_" + wire.BucketGroups,
		"$JS.API.STREAM.INFO.KV_" + wire.BucketGroups,
		"$JS.API.STREAM.INFO.KV_" + wire.BucketPermissions,
		"$JS.API.STREAM.INFO.KV_" + wire.BucketResults,
		"$JS.API.STREAM.PURGE." + wire.StreamCancels,
		"$SRV.PING",
	} {
		refused(t, anc, av, "alice's publish", s)
	}
	for _, s := range []string{"tools.call.>", "tools.cancel.>", wire.Inbox("bob") + ">", "_INBOX.>", wire.MCPUpdatedSubject("*")} {
		if _, err := anc.SubscribeSync(s); err != nil {
			t.Fatal(err)
		}
		anc.Flush()
		av.wait(t, "alice's subscription", s)
	}
	// After all that, she still calls.
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "still"}}); r.Text() != "still" {
		t.Errorf("alice's call after the refusals: %+v", r)
	}
}

// TestRolesGateway: the gateway calls as any identity and reads every
// session's groups, but neither serves calls, nor reads kept results, OAuth
// grants or cancel records, nor writes group state or policies.
func TestRolesGateway(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, _, _ := f.caller(t, "alice")
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	gnc, gv := f.conn(t, auth.RoleGateway, "")
	for _, id := range []string{"alice", "bob"} {
		// The gateway's replies come under the identity's inbox it calls as.
		reply := wire.Inbox(id) + nats.NewInbox()[len("_INBOX."):]
		sub, err := gnc.SubscribeSync(reply)
		if err != nil {
			t.Fatal(err)
		}
		if err := gnc.PublishRequest(wire.CallSubject("echo", id), reply, mustMsgpack(t, &wire.Request{ID: "gw-1", Input: map[string]any{"text": id}})); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			t.Fatalf("the gateway's call as %s: %v", id, err)
		}
		var fr wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &fr); err != nil || fr.Final == nil || fr.Final.Text() != id {
			t.Errorf("the gateway's call as %s: %v, %+v", id, err, fr)
		}
	}
	js, err := jetstream.New(gnc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, wire.BucketGroups)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := wire.SessionKey(toolkit.SessionScope("alice", "s"))
	if e, err := kv.Get(ctx, key); err != nil || string(e.Value()) != `{"key":"`+key+`","groups":["vault"]}` {
		t.Errorf("the gateway's read of alice's groups: %v", err)
	}
	// A listing as alice, its reply under her inbox as a worker demands.
	sub, err := gnc.SubscribeSync(wire.Inbox("alice") + "gw.list")
	if err != nil {
		t.Fatal(err)
	}
	if err := gnc.PublishRequest(wire.ListSubject("alice"), wire.Inbox("alice")+"gw.list", nil); err != nil {
		t.Fatal(err)
	}
	var list wire.ListReply
	if m, err := sub.NextMsgWithContext(ctx); err != nil {
		t.Errorf("the gateway's listing as alice: %v", err)
	} else if err := wire.Msgpack.Unmarshal(m.Data, &list); err != nil || len(list.Tools) == 0 {
		t.Errorf("the gateway's listing as alice: %v, %+v", err, list)
	}

	for _, s := range []string{
		wire.SubjectAnnouncePrefix + "secure-w",
		"$KV." + wire.BucketGroups + "." + key,
		"$KV." + wire.BucketPermissions + ".s." + key,
		"$KV." + wire.BucketResults + "." + wire.ResultKey("alice", "x"),
		"$KV." + wire.BucketOAuth + ".srv",
		"$JS.API.DIRECT.GET.KV_" + wire.BucketResults + ".$KV." + wire.BucketResults + "." + wire.ResultKey("alice", "x"),
		"$JS.API.DIRECT.GET.KV_" + wire.BucketOAuth + ".$KV." + wire.BucketOAuth + ".srv",
		"$JS.API.DIRECT.GET." + wire.StreamCancels + "." + wire.CancelledSubject("alice", "x"),
		"$JS.API.CONSUMER.CREATE." + wire.StreamCalls + ".echo",
		"$JS.API.STREAM.DELETE.KV_" + wire.BucketGroups,
		wire.SubjectControlPrefix + "secure-w.mcp_headers",
	} {
		refused(t, gnc, gv, "the gateway's publish", s)
	}
	for _, s := range []string{"tools.call.>", "tools.cancel.>", wire.SubjectDiscover} {
		if _, err := gnc.SubscribeSync(s); err != nil {
			t.Fatal(err)
		}
		gnc.Flush()
		gv.wait(t, "the gateway's subscription", s)
	}
}

// TestRolesForgedCancels: NATS does not check a request's reply subject,
// so any caller can have JetStream answer one of its own requests on
// another identity's cancel subject: an API response, a direct get's
// empty 404, or a direct get's copy without headers of an empty value.
// Such a message is no cancel: the victim's running call goes
// on, and its call not made yet is not tombstoned.
func TestRolesForgedCancels(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, _, _ := f.caller(t, "alice")
	_, mnc, _ := f.caller(t, "mallory")
	op, _ := f.conn(t, auth.RoleOperator, "")
	seen, err := op.SubscribeSync(wire.CancelSubject("alice", "*"))
	if err != nil {
		t.Fatal(err)
	}
	op.Flush()

	done := make(chan *toolkit.Response, 1)
	started := make(chan struct{})
	go func() {
		var final *toolkit.Response
		for ev := range alice.Call(ctx, toolkit.ToolCall{ID: "run-1", Name: "sleep", Input: map[string]any{"seconds": 30}}) {
			if final == nil && ev.Final == nil {
				select {
				case <-started:
				default:
					close(started)
				}
			}
			final = ev.Final
		}
		done <- final
	}()
	<-started

	// The server's answers mallory may ask for: JSON, an empty body with
	// a status header, and an empty message with no headers at all (a
	// direct get asked with no_hdr of a 404 she had stored under a key of
	// her own), which is what a plain empty cancel looks like.
	forge(ctx, t, f.operatorJS(t), mnc, gadget{"a direct get's 404", directGet(wire.BucketResults, wire.ResultKey("mallory", "none"))},
		wire.BucketResults, wire.ResultKey("mallory", "empty"))
	gadgets := []struct {
		subject string
		body    []byte
	}{
		{"$JS.API.INFO", nil},
		{directGet(wire.BucketResults, wire.ResultKey("mallory", "none")), nil},
		{directGet(wire.BucketResults, wire.ResultKey("mallory", "empty")), []byte(`{"no_hdr":true}`)},
	}
	for _, id := range []string{"run-1", "dur-1"} {
		for _, g := range gadgets {
			if err := mnc.PublishRequest(g.subject, wire.CancelSubject("alice", id), g.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	mnc.Flush()
	for range 2 * len(gadgets) {
		if _, err := seen.NextMsgWithContext(ctx); err != nil {
			t.Fatalf("the server's answers on alice's cancel subjects: %v", err)
		}
	}
	// The server delivered them to the worker before this cancel of
	// alice's, on the same subscription: once it ended her probe, the
	// forged ones were handled.
	probe := make(chan *toolkit.Response, 1)
	go func() {
		probe <- alice.Invoke(ctx, toolkit.ToolCall{ID: "probe-1", Name: "sleep", Input: map[string]any{"seconds": 30}})
	}()
	if err := alice.Cancel("probe-1"); err != nil {
		t.Fatal(err)
	}
	if r := <-probe; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("alice's cancelled probe: %+v", r)
	}
	select {
	case r := <-done:
		t.Fatalf("a server's answer on alice's cancel subject ended her call: %s %s", r.Code, r.Text())
	default:
	}
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "dur-1", Name: "echo", Durable: true, Input: map[string]any{"text": "ran"}}); r.Text() != "ran" {
		t.Errorf("alice's call after a server's answer on its cancel subject: %s %s", r.Code, r.Text())
	}
	if err := alice.Cancel("run-1"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r == nil || r.Code != toolkit.CodeInterrupted {
		t.Fatalf("alice's own cancel: %+v", r)
	}
}
