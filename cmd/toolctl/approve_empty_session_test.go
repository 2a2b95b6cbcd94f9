package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApproveEmptySessionRefused: `toolctl approve --session "$S" c1`
// with S unset approved the call c1 of whichever session had one: an
// empty --session read as no --session (any session). Given, it is
// refused; the call stays pending.
func TestApproveEmptySessionRefused(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	g, tk := guarded(t, ctx, natstest.JS(t, natstest.Connect(t, s)))
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(context.Context, struct{}) (string, error) { return "deployed", nil })); err != nil {
		t.Fatal(err)
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "deploy", Session: "other"}); r.Code != toolkit.CodeApprovalRequired {
		t.Fatalf("%s %q", r.Code, r.Text())
	}
	var so, se bytes.Buffer
	code := run(ctx, []string{"--nats", s.ClientURL(), "approve", "--session", "", "c1"}, nil, &so, &se)
	if code != exitUsage || !strings.Contains(se.String(), "--session") {
		t.Fatalf("approve --session \"\": exit %d\n%s%s; want exit %d naming --session", code, so.String(), se.String(), exitUsage)
	}
	if ps, err := g.Pending(ctx, "other", "c1"); err != nil || len(ps) != 1 {
		t.Fatalf("the call of session other after the refusal: %v, %v; want it pending", ps, err)
	}
}
