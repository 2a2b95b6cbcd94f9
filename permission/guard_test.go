package permission

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

type deployIn struct {
	Env string `json:"env"`
}

type lookupIn struct {
	Key string `json:"key"`
}

type shellIn struct {
	Command string `json:"command"`
}

// worker is one toolbus worker for these tests: a toolkit with a side
// effect tool (deploy), a read-only one (lookup), a real shell tool and a
// group, guarded by a Guard over the given store.
type worker struct {
	tk      *toolkit.Toolkit
	g       *Guard
	deploys atomic.Int64
}

func newWorker(t *testing.T, st Store, opts *Options) *worker {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g, err := NewGuard(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{tk: toolkit.New(nil), g: g}
	w.tk.Use(Middleware(g))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.tk.AddGroup(toolkit.Group{Name: "ops", Description: "Operations."}))
	must(w.tk.Add(toolkit.Func("deploy", "Deploy to an environment.", func(_ context.Context, in deployIn) (string, error) {
		w.deploys.Add(1)
		return "deployed to " + in.Env, nil
	})))
	must(w.tk.Add(toolkit.Func("lookup", "Look a key up.", func(_ context.Context, in lookupIn) (string, error) {
		return "value of " + in.Key, nil
	}), toolkit.ReadOnly()))
	must(w.tk.Add(toolkit.Func(ShellTool, "Run a shell command.", func(ctx context.Context, in shellIn) (string, error) {
		out, err := exec.CommandContext(ctx, "sh", "-c", in.Command).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}), toolkit.WithKind(toolkit.KindShell)))
	must(w.tk.Add(toolkit.Func("restart", "Restart a service.", func(_ context.Context, in lookupIn) (string, error) {
		return "restarted " + in.Key, nil
	}), toolkit.InGroup("ops")))
	return w
}

func (w *worker) call(t *testing.T, session, id, name string, input map[string]any) *toolkit.Response {
	t.Helper()
	return w.tk.Invoke(context.Background(), toolkit.ToolCall{ID: id, Name: name, Session: session, Input: input})
}

func wantResp(t *testing.T, r *toolkit.Response, state toolkit.State, code toolkit.Code, text string) {
	t.Helper()
	if r.State != state || r.Code != code || !strings.Contains(r.Text(), text) {
		t.Fatalf("got %s/%s %q, want %s/%s containing %q", r.State, r.Code, r.Text(), state, code, text)
	}
}

func TestMiddlewareDecisions(t *testing.T) {
	w := newWorker(t, nil, &Options{Rules: []Rule{{Tool: "restart", Behavior: Deny, Source: "config"}}})
	ctx := context.Background()

	wantResp(t, w.call(t, "s", "1", "lookup", map[string]any{"key": "k"}), toolkit.StateSuccess, "", "value of k")
	wantResp(t, w.call(t, "s", "2", ShellTool, map[string]any{"command": "echo hi"}), toolkit.StateSuccess, "", "hi")

	r := w.call(t, "s", "3", "deploy", map[string]any{"env": "prod"})
	wantResp(t, r, toolkit.StateDenied, toolkit.CodeApprovalRequired, "PermissionRequiredError: Permission required for deploy.")
	if r.Metadata[MetaApprovalKey] != "3" || !strings.HasPrefix(r.Metadata[MetaInputDigest].(string), "sha256:") ||
		!slices.Equal(r.Metadata[MetaSuggestedRules].([]string), []string{"deploy"}) || r.Metadata[MetaPermissionReason] != "mode" {
		t.Fatalf("metadata %v", r.Metadata)
	}
	if w.deploys.Load() != 0 {
		t.Fatal("asked call ran")
	}
	ps, err := w.g.Pending(ctx, "s", "3")
	if err != nil || len(ps) != 1 || ps[0].Tool != "deploy" || ps[0].Input != `{"env":"prod"}` || ps[0].Digest != r.Metadata[MetaInputDigest] {
		t.Fatalf("pending %+v %v", ps, err)
	}

	// A config deny rule: the tool is denied (also through the group check).
	wantResp(t, w.call(t, "s", "m", toolkit.MetaToolName, map[string]any{"ops": true}), toolkit.StateSuccess, "", "ops")
	r = w.call(t, "s", "4", "restart", map[string]any{"key": "db"})
	wantResp(t, r, toolkit.StateDenied, toolkit.CodeDenied, "PermissionDeniedError: Permission to use restart has been denied by the rule restart.")

	// Safety asks are flagged, and a rule cannot allow them.
	if err := w.g.Allow(ctx, "s", ShellTool); err != nil {
		t.Fatal(err)
	}
	r = w.call(t, "s", "5", ShellTool, map[string]any{"command": "echo x > ~/.bashrc"})
	wantResp(t, r, toolkit.StateDenied, toolkit.CodeApprovalRequired, "needs confirmation")
	if r.Metadata[MetaSafety] != true || r.Metadata[MetaPermissionReason] != "safety check" {
		t.Fatalf("safety metadata %v", r.Metadata)
	}
}

// ASK → approve → the same call re-sent runs once; the approval is bound to
// the input and consumed.
func TestApproveAndResend(t *testing.T) {
	w := newWorker(t, nil, nil)
	ctx := context.Background()
	in := map[string]any{"env": "prod"}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")

	a, err := w.g.Approve(ctx, "", "c1", "alice")
	if err != nil || a.Session != "s" || a.Tool != "deploy" || a.By != "alice" {
		t.Fatalf("approve: %+v %v", a, err)
	}
	if _, err := w.g.Approve(ctx, "", "c1", "alice"); !errors.Is(err, ErrNoPending) {
		t.Fatalf("second approve: %v", err)
	}

	// Replay with changed input: rejected, nothing runs, approval kept.
	r := w.call(t, "s", "c1", "deploy", map[string]any{"env": "staging"})
	wantResp(t, r, toolkit.StateDenied, toolkit.CodeDenied, "ApprovalMismatchError")
	// Same input under another tool name: rejected too.
	r = w.call(t, "s", "c1", ShellTool, map[string]any{"command": "touch x"})
	wantResp(t, r, toolkit.StateDenied, toolkit.CodeDenied, "ApprovalMismatchError")
	// Another session cannot use it.
	wantResp(t, w.call(t, "other", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	if w.deploys.Load() != 0 {
		t.Fatal("a rejected call ran")
	}

	// The approved call, unchanged (a re-decoded copy of the input), runs once.
	wantResp(t, w.call(t, "s", "c1", "deploy", map[string]any{"env": "prod"}), toolkit.StateSuccess, "", "deployed to prod")
	if w.deploys.Load() != 1 {
		t.Fatalf("ran %d times", w.deploys.Load())
	}
	// Consumed: the next identical call asks again.
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	if w.deploys.Load() != 1 {
		t.Fatal("approval reused")
	}
}

func TestApproveErrors(t *testing.T) {
	w := newWorker(t, nil, nil)
	ctx := context.Background()
	if _, err := w.g.Approve(ctx, "", "nope", "bob"); !errors.Is(err, ErrNoPending) {
		t.Fatalf("unknown call: %v", err)
	}
	if _, err := w.g.Approve(ctx, "", "", "bob"); err == nil {
		t.Fatal("empty id accepted")
	}
	for _, s := range []string{"s1", "s2"} {
		w.call(t, s, "same", "deploy", map[string]any{"env": s})
	}
	if _, err := w.g.Approve(ctx, "", "same", "bob"); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("ambiguous id: %v", err)
	}
	if a, err := w.g.Approve(ctx, "s2", "same", "bob"); err != nil || a.Session != "s2" {
		t.Fatalf("approve with session: %+v %v", a, err)
	}
	wantResp(t, w.call(t, "s2", "same", "deploy", map[string]any{"env": "s2"}), toolkit.StateSuccess, "", "deployed to s2")
	wantResp(t, w.call(t, "s1", "same", "deploy", map[string]any{"env": "s1"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
}

func TestApprovalExpires(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	w := newWorker(t, nil, &Options{ApprovalTTL: time.Hour, Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	ctx := context.Background()
	w.call(t, "s", "c", "deploy", map[string]any{"env": "x"})
	if _, err := w.g.Approve(ctx, "s", "c", "a"); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(2 * time.Hour))
	wantResp(t, w.call(t, "s", "c", "deploy", map[string]any{"env": "x"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	// An expired pending call cannot be approved either.
	clock.Add(int64(2 * time.Hour))
	if _, err := w.g.Approve(ctx, "s", "c", "a"); !errors.Is(err, ErrNoPending) {
		t.Fatalf("approving an expired pending call: %v", err)
	}
}

func TestSessionRulesAndModes(t *testing.T) {
	w := newWorker(t, nil, nil)
	ctx := context.Background()
	if err := w.g.Allow(ctx, "s", "deploy"); err != nil {
		t.Fatal(err)
	}
	if err := w.g.Allow(ctx, "s", "deploy"); err != nil { // idempotent
		t.Fatal(err)
	}
	if p, _, _ := w.g.Store().LoadSession(ctx, "s"); len(p.Rules) != 1 || p.Rules[0].Source != "session" {
		t.Fatalf("rules %+v", p.Rules)
	}
	wantResp(t, w.call(t, "s", "1", "deploy", map[string]any{"env": "a"}), toolkit.StateSuccess, "", "deployed")
	wantResp(t, w.call(t, "t", "1", "deploy", map[string]any{"env": "a"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")

	if err := w.g.SetMode(ctx, "s", ModeExplore); err != nil {
		t.Fatal(err)
	}
	wantResp(t, w.call(t, "s", "2", "deploy", map[string]any{"env": "a"}), toolkit.StateDenied, toolkit.CodeDenied, "explore mode is read-only")
	wantResp(t, w.call(t, "s", "3", "lookup", map[string]any{"key": "k"}), toolkit.StateSuccess, "", "value")
	wantResp(t, w.call(t, "s", "4", toolkit.MetaToolName, map[string]any{"ops": true}), toolkit.StateDenied, toolkit.CodeDenied, "explore")

	if err := w.g.SetMode(ctx, "s", ModeDontAsk); err != nil {
		t.Fatal(err)
	}
	removed, err := w.g.RemoveRule(ctx, "s", Rule{Tool: "deploy", Behavior: Allow})
	if err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	r := w.call(t, "s", "5", "deploy", map[string]any{"env": "a"})
	wantResp(t, r, toolkit.StateDenied, toolkit.CodeDenied, "dont_ask mode")
	if !slices.Equal(r.Metadata[MetaSuggestedRules].([]string), []string{"deploy"}) {
		t.Fatalf("dont_ask deny lost the suggestions: %v", r.Metadata)
	}
	if removed, _ := w.g.RemoveRule(ctx, "s", Rule{Tool: "deploy", Behavior: Allow}); removed {
		t.Fatal("removed a rule twice")
	}

	if err := w.g.SetMode(ctx, "s", ""); err != nil {
		t.Fatal(err)
	}
	wantResp(t, w.call(t, "s", "6", "deploy", map[string]any{"env": "a"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")

	// Bad input is refused and changes nothing.
	if err := w.g.SetMode(ctx, "s", "sideways"); err == nil {
		t.Fatal("bad mode accepted")
	}
	if err := w.g.Allow(ctx, "s", "bad name:x"); err == nil {
		t.Fatal("bad rule accepted")
	}
	if err := w.g.AddRule(ctx, "s", Rule{Tool: "deploy", Behavior: "perhaps"}); err == nil {
		t.Fatal("bad behavior accepted")
	}
	if p, _, _ := w.g.Store().LoadSession(ctx, "s"); p.Mode != "" || len(p.Rules) != 0 {
		t.Fatalf("bad input changed the session: %+v", p)
	}
	if _, err := NewGuard(nil, &Options{Mode: "nope"}); err == nil {
		t.Fatal("bad default mode accepted")
	}
	if _, err := NewGuard(nil, &Options{Rules: []Rule{{Tool: "x"}}}); err == nil {
		t.Fatal("rule without behavior accepted")
	}
}

// Listings honour permissions: tools a session can never run are absent.
func TestSchemasHideToolsThatNeverRun(t *testing.T) {
	w := newWorker(t, nil, nil)
	ctx := context.Background()
	listed := func(session string) []string {
		t.Helper()
		schemas, err := w.g.Schemas(ctx, w.tk, session, 0)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range schemas {
			names = append(names, s.Function.Name)
		}
		return names
	}
	if got := strings.Join(listed("s"), ","); got != "reset_tools,deploy,lookup,execute_shell_command" {
		t.Fatalf("default listing %s", got)
	}
	if err := w.g.AddRule(ctx, "s", Rule{Tool: "deploy", Behavior: Deny}); err != nil {
		t.Fatal(err)
	}
	if err := w.g.AddRule(ctx, "s", Rule{Tool: ShellTool, Pattern: "rm:*", Behavior: Deny}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(listed("s"), ","); got != "reset_tools,lookup,execute_shell_command" {
		t.Fatalf("with a deny rule %s", got)
	}
	if err := w.g.SetMode(ctx, "e", ModeExplore); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(listed("e"), ","); got != "lookup,execute_shell_command" {
		t.Fatalf("explore listing %s", got)
	}
	// Tools the lookup does not know are kept.
	kept, err := w.g.Filter(ctx, "e", []toolkit.FunctionSchema{{Type: "function", Function: toolkit.Function{Name: "remote_tool"}}},
		func(string) (*toolkit.Tool, bool) { return nil, false })
	if err != nil || len(kept) != 1 {
		t.Fatalf("unknown tool dropped: %v %v", kept, err)
	}
}

func TestDigest(t *testing.T) {
	a, _ := Digest(map[string]any{"b": 1.0, "a": []any{"x", map[string]any{"z": true, "y": nil}}})
	b, _ := Digest(map[string]any{"a": []any{"x", map[string]any{"y": nil, "z": true}}, "b": 1})
	if a != b {
		t.Fatalf("key order or number type changed the digest: %s %s", a, b)
	}
	c, _ := Digest(map[string]any{"b": 2, "a": []any{"x", map[string]any{"z": true, "y": nil}}})
	if a == c {
		t.Fatal("different input, same digest")
	}
	e1, _ := Digest(nil)
	e2, _ := Digest(map[string]any{})
	if e1 != e2 {
		t.Fatal("nil and empty input differ")
	}
	if _, err := Digest(map[string]any{"f": func() {}}); err == nil {
		t.Fatal("non-JSON input accepted")
	}
}
