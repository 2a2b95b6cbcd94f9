package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// An operator could approve a call only by its id, and saw its input
// only once it was approved: `toolctl pending` lists what waits first.
func TestPendingListsWhatWaits(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	js := natstest.JS(t, natstest.Connect(t, s))
	_, tk := guarded(t, ctx, js)
	type in struct {
		Env string `json:"env"`
	}
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, v in) (string, error) { return "deployed " + v.Env, nil })); err != nil {
		t.Fatal(err)
	}
	ask := func(id, identity, session, env string) {
		t.Helper()
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "deploy", Session: session, Identity: identity, Input: map[string]any{"env": env}})
		if r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("call %s: %s %q", id, r.Code, r.Text())
		}
	}
	ask("c1", "", "s1", "prod")
	ask("c2", "bob", "s2", "\x1b]0;owned\x07"+strings.Repeat("x", 200))
	ask("c3", "", "s1", "staging")

	toolctl := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, append([]string{"--nats", s.ClientURL()}, args...), nil, &so, &se)
		return so.String(), se.String(), code
	}
	out, errOut, code := toolctl("pending")
	if code != exitOK {
		t.Fatalf("pending: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "CALL ID") {
		t.Fatalf("pending: want a header and 3 calls:\n%s", out)
	}
	for i, want := range []string{"c1  ", "c2  ", "c3  "} {
		if !strings.HasPrefix(lines[i+1], want) {
			t.Errorf("line %d: want %q first (the longest waiting first):\n%s", i+1, want, out)
		}
	}
	if !strings.Contains(lines[1], `{"env":"prod"}`) || !strings.Contains(lines[2], "bob/s2") || !strings.Contains(lines[3], "s1") {
		t.Errorf("pending: sessions or inputs missing:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(lines[2], `\u001b]0;owned\u0007`) || !strings.HasSuffix(lines[2], "…") {
		t.Errorf("pending: a caller's input must be shown escaped and cut:\n%q", lines[2])
	}

	out, _, _ = toolctl("pending", "--session", "s1")
	if strings.Contains(out, "c2") || !strings.Contains(out, "c1") || !strings.Contains(out, "c3") {
		t.Errorf("pending --session s1:\n%s", out)
	}
	out, errOut, _ = toolctl("pending", "--limit", "1")
	if strings.Count(strings.TrimSpace(out), "\n") != 1 || !strings.Contains(errOut, "more calls wait") {
		t.Errorf("pending --limit 1: stdout\n%s\nstderr\n%s", out, errOut)
	}

	out, _, code = toolctl("pending", "--json", "--session", "s2", "--caller", "bob")
	var got []pendingJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("pending --json: exit %d, %v\n%s", code, err, out)
	}
	if len(got) != 1 || got[0].CallID != "c2" || got[0].Identity != "bob" || got[0].Session != "s2" || !strings.Contains(got[0].Input, `\u001b]0;owned`) {
		t.Errorf("pending --json: %+v", got)
	}

	if _, errOut, code := toolctl("approve", "c1", "--session", "s1"); code != exitOK {
		t.Fatalf("approve: exit %d %s", code, errOut)
	}
	out, _, _ = toolctl("pending")
	if strings.Contains(out, "c1") || !strings.Contains(out, "c3") {
		t.Errorf("pending after approving c1:\n%s", out)
	}
	if _, _, code := toolctl("pending", "--limit", "0"); code != exitUsage {
		t.Errorf("pending --limit 0: exit %d, want %d", code, exitUsage)
	}
}

// guarded is a toolkit whose calls go through a permission guard on the
// fleet's permission store (js's), as a worker with a permissions
// section has it, and the guard.
func guarded(t *testing.T, ctx context.Context, js jetstream.JetStream) (*permission.Guard, *toolkit.Toolkit) {
	t.Helper()
	st, err := permission.NewKVStore(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := permission.NewGuard(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	tk.Use(permission.Middleware(g))
	return g, tk
}
