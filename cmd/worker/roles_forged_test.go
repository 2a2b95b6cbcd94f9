package main_test

// Values a caller has the server write into the fleet's buckets: NATS does
// not check a request's reply subject, and JetStream's answers are
// published by the server inside the account, where no role's permissions
// apply. A caller that sends a JetStream request it may send, with the
// reply subject $KV.<bucket>.<key>, has the server's answer stored under
// any key of any bucket. Such a value is never read as the key's own.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// directGet is the direct get of a key's last value in bucket, the one
// request a caller may send on its own keys.
func directGet(bucket, key string) string {
	return "$JS.API.DIRECT.GET.KV_" + bucket + ".$KV." + bucket + "." + key
}

// gadget is a request a caller may send whose answer the server writes
// to the reply subject.
type gadget struct {
	what    string
	subject string
}

// noHdr names the gadget of a direct get asked with no_hdr: the stored
// value alone, without the server's headers (nor the stored ones).
//
// Alice's kept results are a durable call's: a core call's is written by
// compare-and-set (over the revision its call started with), so a copy
// with its stored headers carries Nats-Expected-Last-Subject-Sequence and
// the server stores it only where that revision is the key's; a durable
// call's has none and is stored anywhere.
const noHdr = "a copy of alice's kept result without headers"

// forge has nc send gadget's request with $KV.<bucket>.<key> as its reply
// subject, and waits (through the operator's js) for the bucket's stream
// to have stored the server's answer there.
func forge(ctx context.Context, t *testing.T, js jetstream.JetStream, nc *nats.Conn, g gadget, bucket, key string) {
	t.Helper()
	forgeWithBody(ctx, t, js, nc, g, nil, bucket, key)
}

// forgeWithBody is forge with a request body.
func forgeWithBody(ctx context.Context, t *testing.T, js jetstream.JetStream, nc *nats.Conn, g gadget, body []byte, bucket, key string) {
	t.Helper()
	if !forgeWithin(ctx, t, js, nc, g, body, bucket, key, 0) {
		t.Fatalf("timed out waiting for %s stored under %s %s", g.what, bucket, key)
	}
}

// forgeWithin is forgeWithBody, reporting whether the server stored the
// answer within wait (0: the guard's time).
func forgeWithin(ctx context.Context, t *testing.T, js jetstream.JetStream, nc *nats.Conn, g gadget, body []byte, bucket, key string, wait time.Duration) bool {
	t.Helper()
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	before := st.CachedInfo().State.LastSeq
	if err := nc.PublishRequest(g.subject, "$KV."+bucket+"."+key, body); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if wait == 0 {
		wait = natstest.Guard
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if info, err := st.Info(ctx); err == nil && info.State.LastSeq > before {
			return true
		}
	}
	return false
}

// TestRolesForgedKeptResult: alice keeps a result under the call id bob
// used and has the server copy it (a direct get of her own key, with the
// server's headers or, asked with no_hdr, without any) over bob's kept
// result; or has an API response or a 404 stored there. Bob's Result
// never answers with it: it fails, saying why.
func TestRolesForgedKeptResult(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	alice, anc, _ := f.caller(t, "alice")
	bob, _, _ := f.caller(t, "bob")
	ojs := f.operatorJS(t)
	keep := func(c interface {
		Invoke(context.Context, toolkit.ToolCall) *toolkit.Response
	}, id, text string) {
		t.Helper()
		if r := c.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "echo", Input: map[string]any{"text": text}, KeepResult: true, Durable: true}); r.Text() != text {
			t.Fatalf("kept call %s: %+v", id, r)
		}
	}
	for i, g := range []func(id string) gadget{
		func(string) gadget { return gadget{"an API response", "$JS.API.INFO"} },
		func(string) gadget {
			return gadget{"a direct get's 404", directGet(wire.BucketResults, wire.ResultKey("alice", "never-kept"))}
		},
		func(id string) gadget {
			return gadget{"a copy of alice's kept result", directGet(wire.BucketResults, wire.ResultKey("alice", id))}
		},
		func(id string) gadget {
			return gadget{noHdr, directGet(wire.BucketResults, wire.ResultKey("alice", id))}
		},
	} {
		id := fmt.Sprint("shared-", i)
		keep(bob, id, "bob's")
		keep(alice, id, "alice's")
		gd := g(id)
		if gd.what == noHdr {
			forgeWithBody(ctx, t, ojs, anc, gd, []byte(`{"no_hdr":true}`), wire.BucketResults, wire.ResultKey("bob", id))
		} else {
			forge(ctx, t, ojs, anc, gd, wire.BucketResults, wire.ResultKey("bob", id))
		}
		r := bob.Result(ctx, id)
		if r.State == toolkit.StateSuccess || r.Text() == "alice's" {
			t.Fatalf("bob's kept result after %s was stored over it: %s %q", gd.what, r.Code, r.Text())
		}
		if r.Code != toolkit.CodeUnavailable {
			t.Errorf("bob's kept result after %s was stored over it: %s %q, want unavailable", gd.what, r.Code, r.Text())
		}
	}
	keep(bob, "untouched", "bob's own")
	if r := bob.Result(ctx, "untouched"); r.Text() != "bob's own" {
		t.Errorf("bob's kept result nobody forged: %s %q", r.Code, r.Text())
	}
}

// TestRolesForgedPolicies: the operator holds alice's sessions in explore
// mode (writes denied) and lets another of her sessions bypass. Alice has
// the server store an API response or a 404 over an explore policy, or a
// copy of a value she may read (her session's groups; a copy of her
// policies: TestRolesHeaderlessPolicyCopy) as the policy of a session
// that has none (the fleet's default mode then applies: writes ask). Her
// write is then neither run nor askable: the session's permissions are
// unreadable (unavailable) until the operator sets them again.
func TestRolesForgedPolicies(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	guard := operatorGuard(t, ctx, ojs)
	alice, anc, _ := f.caller(t, "alice")
	if err := guard.SetMode(ctx, toolkit.SessionScope("alice", "open"), permission.ModeBypass); err != nil {
		t.Fatal(err)
	}
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "mine", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	mine, _ := wire.SessionKey(toolkit.SessionScope("alice", "mine"))
	write := func(session string) *toolkit.Response {
		in := map[string]any{"file_path": filepath.Join(f.ws, session+".txt"), "content": "x", "line_number": 1}
		return alice.Invoke(ctx, toolkit.ToolCall{Name: "insert_text_file", Session: session, Input: in})
	}
	for i, c := range []struct {
		gadget
		set  bool         // the session is set to explore first
		code toolkit.Code // alice's write before the forgery
	}{
		{gadget{"an API response", "$JS.API.INFO"}, true, toolkit.CodeDenied},
		{gadget{"a direct get's 404", directGet(wire.BucketGroups, "alice.never-set")}, true, toolkit.CodeDenied},
		{gadget{"a copy of alice's groups", directGet(wire.BucketGroups, mine)}, false, toolkit.CodeApprovalRequired},
	} {
		session := fmt.Sprint("locked-", i)
		scope := toolkit.SessionScope("alice", session)
		if c.set {
			if err := guard.SetMode(ctx, scope, permission.ModeExplore); err != nil {
				t.Fatal(err)
			}
		}
		if r := write(session); r.Code != c.code {
			t.Fatalf("alice's write before %s: %s %q, want %s", c.what, r.Code, r.Text(), c.code)
		}
		key, _ := wire.SessionKey(scope)
		forge(ctx, t, ojs, anc, c.gadget, wire.BucketPermissions, "s."+key)
		r := write(session)
		if r.Code != toolkit.CodeUnavailable {
			t.Fatalf("alice's write after %s was stored as her session's policy: %s %q, want unavailable", c.what, r.Code, r.Text())
		}
		if _, err := guard.Policy(ctx, scope); err == nil {
			t.Errorf("the operator's read of the policy %s replaced: no error", c.what)
		}
		// The operator sets it again over the forged value.
		if err := guard.SetMode(ctx, scope, permission.ModeExplore); err != nil {
			t.Fatalf("setting the mode again over %s: %v", c.what, err)
		}
		if r := write(session); r.Code != toolkit.CodeDenied {
			t.Errorf("alice's write once explore is set again: %s %q", r.Code, r.Text())
		}
	}
	// Her bypass session runs it (the tool then fails: the file does not
	// exist).
	if r := write("open"); r.Code == toolkit.CodeDenied || r.Code == toolkit.CodeApprovalRequired || r.Code == toolkit.CodeUnavailable {
		t.Errorf("alice's write in her bypass session: %s %q", r.Code, r.Text())
	}
}

// TestRolesForgedApprovals: alice has the server store an API response or
// a copy of a kept result of hers as the approval of her own call waiting
// for one, and as its pending record: the call is not run, and the
// operator is not offered the forged record to approve.
func TestRolesForgedApprovals(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	guard := operatorGuard(t, ctx, ojs)
	alice, anc, _ := f.caller(t, "alice")
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "kept", Name: "echo", Input: map[string]any{"text": "x"}, KeepResult: true, Durable: true}); r.Text() != "x" {
		t.Fatalf("alice's kept call: %+v", r)
	}
	key, _ := wire.SessionKey(toolkit.SessionScope("alice", "s"))
	for i, gd := range []gadget{
		{"an API response", "$JS.API.INFO"},
		{"a copy of alice's kept result", directGet(wire.BucketResults, wire.ResultKey("alice", "kept"))},
	} {
		call := toolkit.ToolCall{ID: fmt.Sprint("ask-", i), Name: "insert_text_file", Session: "s",
			Input: map[string]any{"file_path": filepath.Join(f.ws, fmt.Sprint("a", i, ".txt")), "content": "x", "line_number": 1}}
		if r := alice.Invoke(ctx, call); r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("alice's write: %s %q", r.Code, r.Text())
		}
		forge(ctx, t, ojs, anc, gd, wire.BucketApprovals, "approval."+key+"."+call.ID)
		if r := alice.Invoke(ctx, call); r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("alice's write with %s stored as its approval: %s %q, want approval_required", gd.what, r.Code, r.Text())
		}
		// Her pending call, recorded again by that call, replaced.
		forge(ctx, t, ojs, anc, gd, wire.BucketApprovals, "pending."+key+"."+call.ID)
		if a, err := guard.Approve(ctx, toolkit.SessionScope("alice", "s"), call.ID, "op"); err == nil {
			t.Errorf("the operator approved %s stored as a pending call: %+v", gd.what, a)
		}
		if a, err := guard.Approve(ctx, "", call.ID, "op"); !errors.Is(err, permission.ErrNoPending) {
			t.Errorf("the operator's approval by call id alone of %s stored as a pending call: %+v, %v", gd.what, a, err)
		}
		if r := alice.Invoke(ctx, call); r.State == toolkit.StateSuccess {
			t.Fatalf("alice's write ran after %s was stored as its approval and pending call", gd.what)
		}
	}
}

// TestRolesForgedGroups: bob's sessions have the vault group off, by
// reset_tools or by default. Alice has the server store an API response
// or a 404 over his groups, or a copy of her own session's groups (vault
// on; written by compare-and-set, the copy lands only on a key never
// written, and under her write's message id, only past the bucket's
// duplicate window) as the groups of a session of his with none. Bob's call of a
// vault tool is not run: the session's groups are unreadable
// (unavailable) until his next reset_tools writes them again.
func TestRolesForgedGroups(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	alice, anc, _ := f.caller(t, "alice")
	bob, _, _ := f.caller(t, "bob")
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "mine", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	mine, _ := wire.SessionKey(toolkit.SessionScope("alice", "mine"))
	reset := func(session string) {
		t.Helper()
		if r := bob.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: map[string]any{}}); r.State != toolkit.StateSuccess {
			t.Fatalf("bob's reset_tools: %+v", r)
		}
	}
	for i, c := range []struct {
		gadget
		reset bool // bob's reset_tools first
	}{
		{gadget{"an API response", "$JS.API.INFO"}, true},
		{gadget{"a direct get's 404", directGet(wire.BucketGroups, "alice.never-set")}, true},
		{gadget{"a copy of alice's groups", directGet(wire.BucketGroups, mine)}, false},
	} {
		gd := c.gadget
		session := fmt.Sprint("g-", i)
		if c.reset {
			reset(session)
		}
		write := toolkit.ToolCall{Name: "write_text_file", Session: session,
			Input: map[string]any{"file_path": filepath.Join(f.ws, session+".txt"), "content": "x"}}
		if r := bob.Invoke(ctx, write); r.Code != toolkit.CodeGroupInactive {
			t.Fatalf("bob's vault call with the vault off: %s %q", r.Code, r.Text())
		}
		key, _ := wire.SessionKey(toolkit.SessionScope("bob", session))
		if !c.reset {
			// Her groups were stored under a message id of their own
			// (kv.Write): within the bucket's duplicate window (2
			// minutes) a copy of them is refused as a duplicate of
			// hers. Either way bob's call does not run.
			if !forgeWithin(ctx, t, ojs, anc, gd, nil, wire.BucketGroups, key, 10*time.Second) {
				if r := bob.Invoke(ctx, write); r.Code != toolkit.CodeGroupInactive {
					t.Fatalf("bob's vault call after %s was refused as a duplicate: %s %q, want group_inactive", gd.what, r.Code, r.Text())
				}
				continue
			}
		} else {
			forge(ctx, t, ojs, anc, gd, wire.BucketGroups, key)
		}
		if r := bob.Invoke(ctx, write); r.Code != toolkit.CodeUnavailable {
			t.Fatalf("bob's vault call after %s was stored over his groups: %s %q, want unavailable", gd.what, r.Code, r.Text())
		}
		if groups, err := bob.ActiveGroups(ctx, session, 0); err == nil {
			t.Errorf("bob's groups after %s was stored over them: %v, no error", gd.what, groups)
		}
		// His next reset_tools writes them again.
		reset(session)
		if r := bob.Invoke(ctx, write); r.Code != toolkit.CodeGroupInactive {
			t.Errorf("bob's vault call once his groups are written again: %s %q", r.Code, r.Text())
		}
	}
}

// TestRolesForgedSessionPins: alice has the server store an API response,
// a direct get's 404 or a copy of her own kept result as the pin of a
// session of bob's, one never pinned and one pinned to the worker. The
// stored answer is never taken for a worker's name: no call is passed
// on to a subject made of it, and the worker holding the call takes the
// session over by compare-and-set, its final saying that the session's
// state may be missing (the pin it replaced names no worker).
func TestRolesForgedSessionPins(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	alice, anc, _ := f.caller(t, "alice")
	bob, _, _ := f.caller(t, "bob")
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "kept", Name: "echo", Input: map[string]any{"text": "w"}, KeepResult: true, Durable: true}); r.Text() != "w" {
		t.Fatalf("alice's kept call: %+v", r)
	}
	view := func(session string) *toolkit.Response {
		return bob.Invoke(ctx, toolkit.ToolCall{Name: "view_text_file", Session: session, Input: map[string]any{"file_path": "none.txt"}})
	}
	// A first session-bound call makes the bucket.
	if r := view("first"); r.Metadata[wire.MetaSessionWorker] != "secure-w" {
		t.Fatalf("bob's first session-bound call: %s %q %v", r.Code, r.Text(), r.Metadata)
	}
	for i, gd := range []gadget{
		{"an API response", "$JS.API.INFO"},
		{"a direct get's 404", directGet(wire.BucketResults, wire.ResultKey("alice", "never-kept"))},
		{"a copy of alice's kept result", directGet(wire.BucketResults, wire.ResultKey("alice", "kept"))},
	} {
		for _, pinned := range []bool{false, true} {
			session := fmt.Sprint("p-", i, "-", pinned)
			if pinned {
				if r := view(session); r.Metadata[wire.MetaSessionWorker] != "secure-w" {
					t.Fatalf("bob's session-bound call: %s %q %v", r.Code, r.Text(), r.Metadata)
				}
				// Past the while a worker serves a session it found its
				// own without reading the pin again (half the 1 s probe
				// timeout).
				time.Sleep(600 * time.Millisecond)
			}
			key, _ := wire.SessionKey(toolkit.SessionScope("bob", session))
			forge(ctx, t, ojs, anc, gd, wire.BucketSessions, key)
			r := view(session)
			if r.Metadata[wire.MetaSessionWorker] != "secure-w" {
				t.Fatalf("bob's call after %s was stored as his session's pin (pinned %v): %s %q %v\n%s", gd.what, pinned, r.Code, r.Text(), r.Metadata, f.stderr)
			}
			if from, _ := r.Metadata[wire.MetaSessionMovedFrom].(string); from != "" {
				t.Errorf("bob's call after %s was stored as his session's pin (pinned %v): moved from %q", gd.what, pinned, from)
			}
			if !strings.Contains(r.Text(), "its pin was not written by toolbus") {
				t.Errorf("bob's call after %s was stored as his session's pin (pinned %v) does not say the session's state may be missing: %q", gd.what, pinned, r.Text())
			}
			// Taken over: the pin names the worker again.
			if r := view(session); r.Metadata[wire.MetaSessionWorker] != "secure-w" || strings.Contains(r.Text(), "[toolbus]") {
				t.Errorf("bob's next call (pinned %v, %s): %s %q %v", pinned, gd.what, r.Code, r.Text(), r.Metadata)
			}
		}
	}
	if _, ok := f.stderr.wait(func(s string) bool { return strings.Contains(s, "a session's pin was not written by toolbus") }); !ok {
		t.Errorf("the worker did not log the refused pins:\n%s", f.stderr)
	}
	oc, err := bus.NewClient(ojs.Conn(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oc.Close() })
	// Pinned as taken over; a pin forged once more names no worker and
	// is not listed.
	forge(ctx, t, ojs, anc, gadget{"an API response", "$JS.API.INFO"}, wire.BucketSessions, func() string {
		key, _ := wire.SessionKey(toolkit.SessionScope("bob", "first"))
		return key
	}())
	pins, err := oc.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) != 6 {
		t.Errorf("%d sessions listed, want the 6 taken over: %+v", len(pins), pins)
	}
	for _, p := range pins {
		if p.Worker != "secure-w" {
			t.Errorf("a listed pin: %+v", p)
		}
	}
}

// TestRolesForgedGrants: alice has the server store an API response, a
// direct get's 404 or a copy of her own kept result as the OAuth grant of
// a mounted MCP server. A worker's read of it is no grant and says why
// (an error with the value's revision, on which a login replaces it),
// never a grant of empty or borrowed fields.
func TestRolesForgedGrants(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	wnc, _ := f.conn(t, auth.RoleWorker, "")
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	grants, err := mcp.OpenGrants(ctx, wjs, 1)
	if err != nil {
		t.Fatal(err)
	}
	alice, anc, _ := f.caller(t, "alice")
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "kept", Name: "echo", Input: map[string]any{"text": `{"url":"https://evil.example"}`}, KeepResult: true, Durable: true}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's kept call: %+v", r)
	}
	genuine := &mcp.Grant{URL: "https://mcp.example/mcp", ClientID: "c", TokenURL: "https://auth.example/token", AccessToken: "secret", Updated: time.Now()}
	for i, gd := range []gadget{
		{"an API response", "$JS.API.INFO"},
		{"a direct get's 404", directGet(wire.BucketResults, wire.ResultKey("alice", "never-kept"))},
		{"a copy of alice's kept result", directGet(wire.BucketResults, wire.ResultKey("alice", "kept"))},
	} {
		server := fmt.Sprint("srv-", i)
		if _, err := mcp.ReplaceGrant(ctx, grants, server, genuine); err != nil {
			t.Fatal(err)
		}
		forge(ctx, t, ojs, anc, gd, wire.BucketOAuth, server)
		g, rev, err := grants.Load(ctx, server)
		if g != nil || err == nil {
			t.Fatalf("the grant of %s after %s was stored over it: %+v, %v", server, gd.what, g, err)
		}
		if rev == 0 {
			t.Errorf("the grant of %s after %s was stored over it: no revision to replace it on (%v)", server, gd.what, err)
		}
		// A login replaces it.
		if _, err := mcp.ReplaceGrant(ctx, grants, server, genuine); err != nil {
			t.Fatalf("replacing %s stored as a grant: %v", gd.what, err)
		}
		if g, _, err := grants.Load(ctx, server); err != nil || g == nil || g.AccessToken != "secret" {
			t.Errorf("the grant of %s stored again: %+v, %v", server, g, err)
		}
	}
}

// TestRolesForgedDurableCalls: alice has the server store an API
// response, her own durable publish's acknowledgement, a copy of her own
// kept result or a direct get's 404 (no body, a Status header: what a
// pull ends with) on bob's durable subject, where the calls stream takes
// it as a durable call of bob's. A worker pulling it runs nothing and
// answers nobody: it logs it and ends it in the stream, so it is not
// delivered again; bob's durable calls go on.
func TestRolesForgedDurableCalls(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	alice, anc, _ := f.caller(t, "alice")
	bob, _, _ := f.caller(t, "bob")
	if r := alice.Invoke(ctx, toolkit.ToolCall{ID: "kept", Name: "echo", Input: map[string]any{"text": "alice's"}, KeepResult: true, Durable: true}); r.Text() != "alice's" {
		t.Fatalf("alice's kept call: %+v", r)
	}
	// Bob's first durable call: the stream and the echo consumer exist.
	if r := bob.Invoke(ctx, toolkit.ToolCall{ID: "first", Name: "echo", Durable: true, Input: map[string]any{"text": "first"}}); r.Text() != "first" {
		t.Fatalf("bob's durable call: %s %q", r.Code, r.Text())
	}
	st, err := ojs.Stream(ctx, wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	own := nats.NewMsg(wire.DurableSubject("echo", "alice"))
	own.Header.Set(wire.HeaderReply, wire.Inbox("alice")+"x.y")
	own.Header.Set(jetstream.MsgIDHeader, wire.ResultKey("alice", "acked"))
	own.Data = mustMsgpack(t, &wire.Request{ID: "acked", Input: map[string]any{"text": "alice's durable"}})
	own.Reply = wire.DurableSubject("echo", "bob")
	for _, m := range []*nats.Msg{
		{Subject: "$JS.API.INFO", Reply: wire.DurableSubject("echo", "bob")},
		own, // its acknowledgement
		{Subject: directGet(wire.BucketResults, wire.ResultKey("alice", "kept")), Reply: wire.DurableSubject("echo", "bob")},
		{Subject: directGet(wire.BucketResults, wire.ResultKey("alice", "never-kept")), Reply: wire.DurableSubject("echo", "bob")},
	} {
		if err := anc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	anc.Flush()
	natstest.WaitFor(t, "the server's answers stored on bob's durable subject and ended by the worker", func() bool {
		info, err := st.Info(ctx)
		// Stored: alice's own call and the four answers, after bob's first.
		return err == nil && info.State.LastSeq >= 6 && info.State.Msgs == 0
	})
	n := 0
	if _, ok := f.stderr.wait(func(s string) bool {
		if strings.Contains(s, "not a durable call") && strings.Contains(s, `"subject":"`+wire.DurableSubject("echo", "bob")+`"`) {
			n++
		}
		return n == 4
	}); !ok {
		t.Fatalf("the worker did not log the server's answers on bob's durable subject:\n%s", f.stderr)
	}
	if r := bob.Invoke(ctx, toolkit.ToolCall{ID: "after", Name: "echo", Durable: true, Input: map[string]any{"text": "after"}}); r.Text() != "after" {
		t.Errorf("bob's durable call after the server's answers: %s %q", r.Code, r.Text())
	}
	for _, l := range strings.Split(f.stderr.String(), "\n") {
		if strings.Contains(l, `"msg":"tool call"`) && strings.Contains(l, `"identity":"bob"`) && !strings.Contains(l, `"call":"first"`) && !strings.Contains(l, `"call":"after"`) {
			t.Errorf("a server's answer ran as bob's call: %s", l)
		}
	}
}

// operatorJS is JetStream on a connection of the operator's role.
func (f *secureFleet) operatorJS(t *testing.T) jetstream.JetStream {
	t.Helper()
	op, _ := f.conn(t, auth.RoleOperator, "")
	js, err := jetstream.New(op)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// operatorGuard is the permission guard the operator sets modes with.
func operatorGuard(t *testing.T, ctx context.Context, js jetstream.JetStream) *permission.Guard {
	t.Helper()
	store, err := permission.NewKVStore(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	guard, err := permission.NewGuard(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return guard
}

// TestRolesForgedCancelRecords: bob's durable calls wait in the queue
// while no worker takes durable calls. Alice has the server store, as
// the cancel record of one of them, a direct get's 404 (stored without
// its status line: an empty message, an empty cancel's body), or a copy
// of such a message she may read. The worker that takes the calls later
// runs them: neither is a cancel.
func TestRolesForgedCancelRecords(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"durable:\n  off: true\n")
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	_, anc, _ := f.caller(t, "alice")
	bob, _, _ := f.caller(t, "bob")
	cfg := filepath.Join(t.TempDir(), "durable.yaml")
	mustWrite(t, cfg, secureConfig)
	durable := func(instance string) *worker {
		return startWorker(t, "--nats", f.url, "--config", cfg, "--nkey", filepath.Join(f.auth, "worker.nk"), "--instance", instance)
	}
	d := durable("durable-1")
	if r := bob.Invoke(ctx, toolkit.ToolCall{ID: "first", Name: "echo", Durable: true, Input: map[string]any{"text": "first"}}); r.Text() != "first" {
		t.Fatalf("bob's durable call: %s %q", r.Code, r.Text())
	}
	d.stop(t)
	// An empty message alice may read: a 404 stored under a kept result
	// of hers.
	forge(ctx, t, ojs, anc, gadget{"a direct get's 404", directGet(wire.BucketResults, wire.ResultKey("alice", "never-kept"))},
		wire.BucketResults, wire.ResultKey("alice", "empty"))
	calls, err := ojs.Stream(ctx, wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	cancels, err := ojs.Stream(ctx, wire.StreamCancels)
	if err != nil {
		t.Fatal(err)
	}
	gadgets := []gadget{
		{"a direct get's 404", directGet(wire.BucketResults, wire.ResultKey("alice", "never-kept"))},
		{"a copy of an empty message", directGet(wire.BucketResults, wire.ResultKey("alice", "empty"))},
	}
	done := make(chan *toolkit.Response, len(gadgets))
	for i, gd := range gadgets {
		id := fmt.Sprint("queued-", i)
		go func() {
			done <- bob.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "echo", Durable: true, Input: map[string]any{"text": "ran " + id}})
		}()
		natstest.WaitFor(t, "bob's call "+id+" queued", func() bool {
			info, err := calls.Info(ctx)
			return err == nil && info.State.Msgs == uint64(i+1)
		})
		if err := anc.PublishRequest(gd.subject, wire.CancelledSubject("bob", id), nil); err != nil {
			t.Fatal(err)
		}
		anc.Flush()
		natstest.WaitFor(t, gd.what+" stored as the cancel record of bob's "+id, func() bool {
			info, err := cancels.Info(ctx)
			return err == nil && info.State.Msgs == uint64(i+1)
		})
	}
	durable("durable-2")
	for range gadgets {
		if r := <-done; r.State != toolkit.StateSuccess || !strings.HasPrefix(r.Text(), "ran ") {
			t.Errorf("bob's queued durable call after a server's answer was stored as its cancel record: %s %q", r.Code, r.Text())
		}
	}
}

// TestRolesConsumerDeliversIntoNoBucket: alice may create consumers of
// the groups bucket on her own keys, and a push consumer delivers to any
// subject she names. Were its deliveries stored on a key of another
// bucket, a delete marker of hers, delivered without the server's
// Nats-Stream, Nats-Sequence..., could read as bob's policy deleted
// (looser). The server delivers to a push consumer's subject only while
// a subscription on exactly that subject exists (a stream's own,
// $KV.<bucket>.>, does not count; and a delivery keeps its own subject,
// so only heartbeats and flow control would land on the key, with the
// server's headers), and no role subscribes to a key: nothing of hers is
// stored, and bob's policy holds.
func TestRolesConsumerDeliversIntoNoBucket(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	guard := operatorGuard(t, ctx, ojs)
	alice, anc, _ := f.caller(t, "alice")
	bob, _, _ := f.caller(t, "bob")
	scope := toolkit.SessionScope("bob", "locked")
	if err := guard.SetMode(ctx, scope, permission.ModeExplore); err != nil {
		t.Fatal(err)
	}
	write := func() *toolkit.Response {
		in := map[string]any{"file_path": filepath.Join(f.ws, "locked.txt"), "content": "x", "line_number": 1}
		return bob.Invoke(ctx, toolkit.ToolCall{Name: "insert_text_file", Session: "locked", Input: in})
	}
	if r := write(); r.Code != toolkit.CodeDenied {
		t.Fatalf("bob's write in explore mode: %s %q", r.Code, r.Text())
	}
	// A delete marker under alice's key (the operator resets her groups).
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "mine", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	state, err := bus.NewKVState(ctx, ojs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := state.Delete(ctx, toolkit.SessionScope("alice", "mine")); err != nil {
		t.Fatal(err)
	}
	mine, _ := wire.SessionKey(toolkit.SessionScope("alice", "mine"))
	key, _ := wire.SessionKey(scope)
	policies, err := ojs.Stream(ctx, "KV_"+wire.BucketPermissions)
	if err != nil {
		t.Fatal(err)
	}
	before, err := policies.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	filter := "$KV." + wire.BucketGroups + "." + mine
	for i, deliver := range []string{"$KV." + wire.BucketPermissions + ".s." + key} {
		name := fmt.Sprint("into-", i)
		req := fmt.Sprintf(`{"stream_name":"KV_%s","config":{"name":%q,"deliver_subject":%q,"filter_subject":%q,"deliver_policy":"last_per_subject","ack_policy":"none","idle_heartbeat":100000000,"flow_control":true}}`,
			wire.BucketGroups, name, deliver, filter)
		m, err := anc.Request("$JS.API.CONSUMER.CREATE.KV_"+wire.BucketGroups+"."+name+"."+filter, []byte(req), 5*time.Second)
		if err != nil || !strings.Contains(string(m.Data), `"deliver_subject"`) {
			t.Fatalf("alice's push consumer delivering to %s: %v %s", deliver, err, m.Data)
		}
	}
	time.Sleep(time.Second) // ten heartbeat intervals
	after, err := policies.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.LastSeq != before.State.LastSeq {
		t.Errorf("the policies bucket stored %d messages of alice's consumer", after.State.LastSeq-before.State.LastSeq)
	}
	if r := write(); r.Code != toolkit.CodeDenied {
		t.Errorf("bob's write in explore mode after alice's consumer delivered into his policy's key: %s %q", r.Code, r.Text())
	}
}

// TestRolesHeaderlessPolicyCopy: the operator holds one of alice's
// sessions in explore mode and lets another bypass. A direct get asked
// with {"no_hdr":true} answers with the stored body alone, no headers: a
// copy of her bypass policy, stored over the explore one with her direct
// get's reply subject, would be a policy like any the operator writes,
// and her writes would run. A policy is stored with the session it is
// for, so the copy is refused: her write is neither run nor askable
// (unavailable) until the operator sets the policy again.
func TestRolesHeaderlessPolicyCopy(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	guard := operatorGuard(t, ctx, ojs)
	alice, anc, _ := f.caller(t, "alice")
	if err := guard.SetMode(ctx, toolkit.SessionScope("alice", "open"), permission.ModeBypass); err != nil {
		t.Fatal(err)
	}
	locked := toolkit.SessionScope("alice", "locked")
	if err := guard.SetMode(ctx, locked, permission.ModeExplore); err != nil {
		t.Fatal(err)
	}
	open, _ := wire.SessionKey(toolkit.SessionScope("alice", "open"))
	key, _ := wire.SessionKey(locked)
	write := func() *toolkit.Response {
		in := map[string]any{"file_path": filepath.Join(f.ws, "locked.txt"), "content": "x", "line_number": 1}
		return alice.Invoke(ctx, toolkit.ToolCall{Name: "insert_text_file", Session: "locked", Input: in})
	}
	if r := write(); r.Code != toolkit.CodeDenied {
		t.Fatalf("alice's write in explore mode: %s %q", r.Code, r.Text())
	}
	forgeWithBody(ctx, t, ojs, anc, gadget{"a copy of alice's bypass policy without headers", directGet(wire.BucketPermissions, "s."+open)},
		[]byte(`{"no_hdr":true}`), wire.BucketPermissions, "s."+key)
	if r := write(); r.Code != toolkit.CodeUnavailable {
		t.Errorf("alice's write in explore mode after a headerless copy of her bypass policy was stored over it: %s %q; want unavailable", r.Code, r.Text())
	}
	// The operator's next word replaces it.
	if err := guard.SetMode(ctx, locked, permission.ModeExplore); err != nil {
		t.Fatal(err)
	}
	if r := write(); r.Code != toolkit.CodeDenied {
		t.Errorf("alice's write in explore mode set again: %s %q", r.Code, r.Text())
	}
}

// TestRolesHeaderlessGroupsCopy: alice's session has the vault group on,
// bob's have it off (by reset_tools, or by default). A direct get asked
// with {"no_hdr":true} answers with the stored value alone, no headers:
// a copy of alice's groups, stored over bob's with her direct get's reply
// subject, would read as his session's groups, vault on. A session's
// groups are stored with the session they are for, so the copy is
// refused: bob's vault call is not run (unavailable, as for any value no
// worker wrote) until his next reset_tools writes his groups again.
func TestRolesHeaderlessGroupsCopy(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	ctx := secureCtx(t)
	ojs := f.operatorJS(t)
	alice, anc, _ := f.caller(t, "alice")
	bob, _, _ := f.caller(t, "bob")
	if r := alice.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "mine", Input: map[string]any{"vault": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	mine, _ := wire.SessionKey(toolkit.SessionScope("alice", "mine"))
	reset := func(session string) {
		t.Helper()
		if r := bob.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: map[string]any{}}); r.State != toolkit.StateSuccess {
			t.Fatalf("bob's reset_tools: %+v", r)
		}
	}
	for _, set := range []bool{true, false} {
		session := fmt.Sprint("copied-", set)
		if set {
			reset(session)
		}
		write := toolkit.ToolCall{Name: "write_text_file", Session: session,
			Input: map[string]any{"file_path": filepath.Join(f.ws, session+".txt"), "content": "x"}}
		if r := bob.Invoke(ctx, write); r.Code != toolkit.CodeGroupInactive {
			t.Fatalf("bob's vault call with the vault off: %s %q", r.Code, r.Text())
		}
		key, _ := wire.SessionKey(toolkit.SessionScope("bob", session))
		forgeWithBody(ctx, t, ojs, anc, gadget{"a copy of alice's groups without headers", directGet(wire.BucketGroups, mine)},
			[]byte(`{"no_hdr":true}`), wire.BucketGroups, key)
		if r := bob.Invoke(ctx, write); r.Code != toolkit.CodeUnavailable {
			t.Fatalf("bob's vault call after a headerless copy of alice's groups was stored over his (set %v): %s %q, want unavailable", set, r.Code, r.Text())
		}
		if groups, err := bob.ActiveGroups(ctx, session, 0); err == nil {
			t.Errorf("bob's groups after a headerless copy of alice's was stored over them (set %v): %v, no error", set, groups)
		}
		reset(session)
		if r := bob.Invoke(ctx, write); r.Code != toolkit.CodeGroupInactive {
			t.Errorf("bob's vault call once his groups are written again: %s %q", r.Code, r.Text())
		}
	}
}
