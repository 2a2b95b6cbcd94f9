package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// deployWorker serves a guarded deploy tool (a worker with a
// permissions section, in default mode: deploy asks) on s, and returns
// a toolctl against s.
func deployWorker(t *testing.T, ctx context.Context, s *embedded.Server) func(args ...string) (string, string, int) {
	t.Helper()
	nc := natstest.Connect(t, s)
	_, tk := guarded(t, ctx, natstest.JS(t, nc))
	type in struct {
		Env string `json:"env"`
	}
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, v in) (string, error) { return "deployed " + v.Env, nil })); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, append([]string{"--nats", s.ClientURL()}, args...), nil, &so, &se)
		return so.String(), se.String(), code
	}
}

// TestDenyEndToEnd: an operator could approve a call that asked, never
// refuse it: it stayed in `toolctl pending` until it expired, and sent
// again it asked again. `toolctl deny` takes it out of pending, and the
// same call sent again ends denied with the operator's reason; another
// input under the id, and another id, ask as before.
func TestDenyEndToEnd(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	toolctl := deployWorker(t, ctx, s)

	out, errOut, code := toolctl("call", "--session", "s1", "--id", "c1", "deploy", `{"env":"prod"}`)
	if code == exitOK || !strings.Contains(errOut, "code approval_required") || !strings.Contains(errOut, "toolctl deny") {
		t.Fatalf("first call: exit %d, want approval_required with a hint naming deny\n%s%s", code, out, errOut)
	}
	if out, errOut, code := toolctl("deny", "--session", "s1", "--by", "alice", "--reason", "not on a Friday", "c1"); code != exitOK || !strings.Contains(out, "denied call c1 of session s1: deploy") {
		t.Fatalf("deny: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, _ := toolctl("pending"); strings.Contains(out, "c1") {
		t.Fatalf("pending after deny lists the denied call:\n%s%s", out, errOut)
	}
	for range 2 {
		out, errOut, code = toolctl("call", "--session", "s1", "--id", "c1", "deploy", `{"env":"prod"}`)
		if code == exitOK || !strings.Contains(errOut, "ended denied (code denied)") || !strings.Contains(out+errOut, "not on a Friday") || strings.Contains(errOut, "approve") {
			t.Fatalf("the denied call sent again: exit %d, want denied with the reason\n%s%s", code, out, errOut)
		}
	}
	if out, errOut, _ := toolctl("pending"); strings.Contains(out, "c1") {
		t.Fatalf("pending after the denied call was sent again:\n%s%s", out, errOut)
	}
	if _, errOut, code := toolctl("deny", "--session", "s1", "c1"); code != exitError || !strings.Contains(errOut, "denied") {
		t.Fatalf("deny of a call denied already: exit %d %q", code, errOut)
	}
	for _, c := range [][2]string{{"c1", `{"env":"staging"}`}, {"c2", `{"env":"prod"}`}} {
		if out, errOut, _ := toolctl("call", "--session", "s1", "--id", c[0], "deploy", c[1]); !strings.Contains(errOut, "code approval_required") {
			t.Fatalf("call %s %s: want approval_required, unaffected by the denial\n%s%s", c[0], c[1], out, errOut)
		}
	}
	if out, _, _ := toolctl("pending"); !strings.Contains(out, `{"env":"staging"}`) || !strings.Contains(out, "c2") {
		t.Fatalf("pending: want c1 (staging) and c2 waiting:\n%s", out)
	}
}

// TestApproveWithoutSession: the approval of a call sent without a
// session printed "of session :".
func TestApproveWithoutSession(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	toolctl := deployWorker(t, ctx, s)
	for _, id := range []string{"c1", "c2"} {
		if out, errOut, _ := toolctl("call", "--id", id, "deploy", `{"env":"prod"}`); !strings.Contains(errOut, "code approval_required") {
			t.Fatalf("call %s: want approval_required\n%s%s", id, out, errOut)
		}
	}
	out, errOut, code := toolctl("approve", "c1")
	if code != exitOK || strings.Contains(out, "session :") || !strings.Contains(out, "approved call c1 without a session: deploy") {
		t.Fatalf("approve of a session-less call: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = toolctl("deny", "c2")
	if code != exitOK || !strings.Contains(out, "denied call c2 without a session: deploy") {
		t.Fatalf("deny of a session-less call: exit %d\n%s%s", code, out, errOut)
	}
}
