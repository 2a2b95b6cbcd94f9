package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApproveAmbiguousNamesTheCaller: the same call id waits in two
// caller identities' sessions of one name. toolctl approve said to name
// one with --session, which alone names the operator's own (anonymous)
// session, where nothing waits: it has to say --caller too.
func TestApproveAmbiguousNamesTheCaller(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	_, tk := guarded(t, ctx, natstest.JS(t, natstest.Connect(t, s)))
	type in struct {
		Env string `json:"env"`
	}
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, v in) (string, error) { return "deployed " + v.Env, nil })); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"alice", "bob"} {
		if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "deploy", Session: "s1", Identity: id, Input: map[string]any{"env": id}}); r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("%s: %s %q", id, r.Code, r.Text())
		}
	}
	toolctl := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, append([]string{"--nats", s.ClientURL()}, args...), nil, &so, &se)
		return so.String(), se.String(), code
	}
	_, errOut, code := toolctl("approve", "c1")
	if code != exitUsage || !strings.Contains(errOut, "alice/s1") || !strings.Contains(errOut, "--caller") {
		t.Fatalf("approve of an id waiting in two callers' sessions: exit %d, %q; want exit %d naming --caller", code, errOut, exitUsage)
	}
	if out, errOut, code := toolctl("approve", "--caller", "bob", "--session", "s1", "c1"); code != exitOK || !strings.Contains(out, "bob/s1") {
		t.Fatalf("approve with --caller and --session: exit %d\n%s%s", code, out, errOut)
	}
}
