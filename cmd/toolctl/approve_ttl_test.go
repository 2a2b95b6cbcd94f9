package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApproveHonoursWorkerTTL: the workers run with
// permissions.approval_ttl 72h (a valid config; their buckets are made
// with 72h). A call asked 30 hours ago is still pending for them and an
// approval would be honoured, but `toolctl approve` (and the gateway's
// elicitation approval, same e.guard) builds its Guard with the default
// 24h and answers "no call is waiting".
// toolctl approve used a 24 h TTL whatever the workers keep: a call
// pending for 30 h under approval_ttl 72h was "not waiting".
func TestApproveHonoursWorkerTTL(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	js := natstest.JS(t, natstest.Connect(t, s))
	st, err := permission.NewKVStore(ctx, js, &permission.KVConfig{ApprovalTTL: 72 * time.Hour}) // the worker's mount
	if err != nil {
		t.Fatal(err)
	}
	asked := time.Now().Add(-30 * time.Hour)
	g, err := permission.NewGuard(st, &permission.Options{ApprovalTTL: 72 * time.Hour, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return asked }})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	tk.Use(permission.Middleware(g))
	type in struct {
		Env string `json:"env"`
	}
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, v in) (string, error) { return "deployed " + v.Env, nil })); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "deploy", Session: "s1", Input: map[string]any{"env": "prod"}})
	if r.Code != toolkit.CodeApprovalRequired {
		t.Fatalf("first call: %s %q", r.Code, r.Text())
	}
	var so, se bytes.Buffer
	code := run(ctx, []string{"--nats", s.ClientURL(), "approve", "c1", "--by", "alice"}, nil, &so, &se)
	if code != exitOK {
		t.Fatalf("toolctl approve of a call pending 30h (worker approval_ttl 72h): exit %d\n%s%s", code, so.String(), se.String())
	}
}
