package permission

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A call that asked and is allowed since by a rule of its session (the
// rule its ask suggested, or one for every call of the tool), or by the
// session's ModeBypass, waits for no approval: sent again, it runs.
// Guard.ListPending left it listed as waiting for good (until it
// expired). It is left out; a call a rule cannot let run (a safety
// check, an ask rule, a session in ModeExplore) stays listed.
func TestListPendingLeavesOutAllowed(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	g, err := NewGuard(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	shell := Rule{Tool: "execute_shell_command", Pattern: "git push:*", Behavior: Allow}
	for _, p := range []Pending{
		{Session: "s1", CallID: "deploy", Tool: "deploy", Reason: "mode", Suggested: []Rule{{Tool: "deploy", Behavior: Allow}}},
		{Session: "s1", CallID: "push", Tool: "execute_shell_command", Reason: "mode", Suggested: []Rule{shell}},
		{Session: "s1", CallID: "rm", Tool: "execute_shell_command", Reason: "safety check", Safety: true},
		{Session: "s1", CallID: "other", Tool: "execute_shell_command", Reason: "mode", Suggested: []Rule{{Tool: "execute_shell_command", Pattern: "make:*", Behavior: Allow}}},
		{Session: "s2", CallID: "asked", Tool: "deploy", Reason: "ask rule"},
		{Session: "s3", CallID: "any", Tool: "deploy", Reason: "mode"},
		{Session: "s4", CallID: "explore", Tool: "deploy", Reason: "mode"},
	} {
		p.Created = time.Now().UTC()
		if err := st.PutPending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() (out []string) {
		t.Helper()
		ps, _, err := g.ListPending(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			out = append(out, p.Session+"/"+p.CallID)
		}
		return out
	}
	if got := listed(); len(got) != 7 {
		t.Fatalf("before any rule: %q, want all 7", got)
	}
	for _, r := range []struct {
		session string
		rule    Rule
	}{
		{"s1", Rule{Tool: "deploy", Behavior: Allow}},
		{"s1", shell},
		{"s1", Rule{Tool: "execute_shell_command", Pattern: "rm:*", Behavior: Allow}},
		{"s2", Rule{Tool: "deploy", Behavior: Allow}},
		{"s4", Rule{Tool: "deploy", Behavior: Allow}},
	} {
		if err := g.AddRule(ctx, r.session, r.rule); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.SetMode(ctx, "s3", ModeBypass); err != nil {
		t.Fatal(err)
	}
	if err := g.SetMode(ctx, "s4", ModeExplore); err != nil {
		t.Fatal(err)
	}
	want := []string{"s1/rm", "s1/other", "s2/asked", "s4/explore"}
	if got := listed(); !slices.Equal(got, want) {
		t.Errorf("after the rules: %q, want %q", got, want)
	}
	// Still there to approve: only the listing leaves it out.
	if _, err := g.Approve(ctx, "s1", "deploy", "alice"); err != nil {
		t.Errorf("approving a call a rule allows since: %v", err)
	}
}

// A shell line of two commands asks with a rule suggested for each; an
// allow rule must cover every command, so with only one of them added the
// call, sent again, still asks. It waits for a person and stays listed:
// one suggested rule added is not "surely allowed".
func TestListPendingKeepsPartlyAllowed(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	w := newWorker(t, st, nil)
	in := map[string]any{"command": "touch toolbus-never-a && mkdir toolbus-never-b"}
	r := w.call(t, "s", "two", ShellTool, in)
	if r.Code != "approval_required" {
		t.Fatalf("the two-command line: %s %q, want approval_required", r.Code, r.Text())
	}
	ps, err := st.FindPending(ctx, "s", "two")
	if err != nil || len(ps) != 1 || len(ps[0].Suggested) != 2 {
		t.Fatalf("pending: %+v %v, want one with two suggested rules", ps, err)
	}
	if err := w.g.AddRule(ctx, "s", ps[0].Suggested[0]); err != nil {
		t.Fatal(err)
	}
	listed, _, err := w.g.ListPending(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 {
		t.Errorf("with one of its two suggested rules added, the call is listed %d times, want 1 (it still asks)", len(listed))
	}
	if r := w.call(t, "s", "two", ShellTool, in); r.Code != "approval_required" {
		t.Fatalf("sent again with one rule of two: %s %q, want approval_required", r.Code, r.Text())
	}
	if err := w.g.AddRule(ctx, "s", ps[0].Suggested[1]); err != nil {
		t.Fatal(err)
	}
	if listed, _, err := w.g.ListPending(ctx, "", 10); err != nil || len(listed) != 0 {
		t.Errorf("with both suggested rules added: %d listed (%v), want none", len(listed), err)
	}
}
