package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A call that asked, then allowed by `toolctl allow` (the rule its ask
// suggested), waits for nobody: sent again, it runs. `toolctl pending`
// kept listing it as waiting for approval.
func TestPendingLeavesOutCallsAllowedSince(t *testing.T) {
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
	call := func(id, session string) *toolkit.Response {
		return tk.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "deploy", Session: session, Input: map[string]any{"env": "prod"}})
	}
	for _, c := range [][2]string{{"c1", "s1"}, {"c2", "s2"}} {
		if r := call(c[0], c[1]); r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("call %s: %s %q", c[0], r.Code, r.Text())
		}
	}
	toolctl := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, append([]string{"--nats", s.ClientURL()}, args...), nil, &so, &se)
		return so.String(), se.String(), code
	}
	if out, se, code := toolctl("allow", "--session", "s1", "deploy"); code != exitOK {
		t.Fatalf("allow: exit %d\n%s%s", code, out, se)
	}
	out, se, code := toolctl("pending")
	if code != exitOK || strings.Contains(out, "c1") || !strings.Contains(out, "c2") {
		t.Fatalf("pending after allowing s1's deploy: exit %d, want c2 alone listed\n%s%s", code, out, se)
	}
	if r := call("c1", "s1"); r.Text() != "deployed prod" {
		t.Fatalf("the call allowed since, sent again: %s %q", r.Code, r.Text())
	}
}
