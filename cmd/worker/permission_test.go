package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// permissionConfig writes the config of the checked workers: write and
// view in basic, the Python tool in basic and denied by a worker-wide
// rule, default mode.
func permissionConfig(t *testing.T) (cfg, workspace string) {
	t.Helper()
	dir := t.TempDir()
	workspace = filepath.Join(dir, "ws")
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "worker.yaml")
	mustWrite(t, cfg, `builtins:
  workspace: ws
  tools:
    - name: echo
    - name: view_text_file
    - name: write_text_file
    - name: execute_python_code
      group: basic
permissions:
  mode: default
  deny: [execute_python_code]
`)
	return cfg, workspace
}

// callJSON runs toolctl call --json and returns the final and the exit code.
func callJSON(t *testing.T, url string, args ...string) (final map[string]any, code int) {
	t.Helper()
	out, se, code := toolctl(t, url, append([]string{"call", "--json"}, args...)...)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Final map[string]any `json:"final"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Final != nil {
			return ev.Final, code
		}
	}
	t.Fatalf("toolctl call %v: no final (exit %d)\nstdout:\n%s\nstderr:\n%s", args, code, out, se)
	return nil, code
}

func metaOf(final map[string]any, key string) any {
	m, _ := final["metadata"].(map[string]any)
	return m[key]
}

// TestPermissions: ASK → toolctl approve → the re-sent call runs on
// another worker; a changed input cannot use the approval; toolctl allow
// adds a rule; listings hide what a session can never run.
func TestPermissions(t *testing.T) {
	// w0 hosts the server and serves only sleep, unchecked (a tool the
	// others do not serve: workers serving the same tool must check it
	// alike); w1 and w2 are the checked workers, sharing the permission
	// buckets.
	cfg, ws := permissionConfig(t)
	host := filepath.Join(t.TempDir(), "host.yaml")
	mustWrite(t, host, "builtins:\n  tools: [{name: sleep}]\n")
	w0 := startWorker(t, "--instance", "w0", "--config", host)
	checked := map[string]*worker{}
	for _, id := range []string{"w1", "w2"} {
		w := startWorker(t, "--nats", w0.url, "--config", cfg, "--instance", id)
		if !strings.Contains(w.stderr.String(), `"permission checks on"`) {
			t.Fatalf("%s: no permission start line:\n%s", id, w.stderr)
		}
		checked[id] = w
	}
	natstest.WaitFor(t, "both checked workers in the listing", func() bool {
		out, _, _ := toolctl(t, w0.url, "tools", "--json")
		var tools []struct {
			Name      string   `json:"name"`
			Instances []string `json:"instances"`
		}
		json.Unmarshal([]byte(out), &tools)
		for _, tl := range tools {
			if tl.Name == "write_text_file" {
				return len(tl.Instances) == 2
			}
		}
		return false
	})

	write := func(content string) string {
		b, _ := json.Marshal(map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": content})
		return string(b)
	}

	// ASK: the call ends at once, approval_required, nothing written.
	final, code := callJSON(t, w0.url, "--session", "s1", "--id", "c1", "write_text_file", write("hello"))
	if code != 3 || final["code"] != "approval_required" || metaOf(final, "approval_key") != "c1" {
		t.Fatalf("first call: exit %d, final %v; want exit 3, approval_required, approval_key c1", code, final)
	}
	if rules, _ := metaOf(final, "suggested_rules").([]any); len(rules) == 0 {
		t.Errorf("no suggested rules in %v", final)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the file exists before the approval: %v", err)
	}
	_, se, _ := toolctl(t, w0.url, "call", "--session", "s1", "--id", "c1", "write_text_file", write("hello"))
	if !strings.Contains(se, "toolctl approve --session s1 c1,") || !strings.Contains(se, "toolctl allow --session s1 'write_text_file") {
		t.Errorf("toolctl call gives no approval hint:\n%s", se)
	}
	// A caller identity's hint names its session, for the operator who
	// runs it with another key.
	_, se, _ = toolctl(t, w0.url, "--identity", "bob", "call", "--session", "s1", "write_text_file", write("bob's"))
	if !strings.Contains(se, "toolctl allow --caller bob --session s1 'write_text_file") {
		t.Errorf("the approval hint of bob's call does not name his session:\n%s", se)
	}

	// The worker that asked goes away; the approval lives in KV.
	asked, _ := metaOf(final, "worker").(string)
	other := map[string]string{"w1": "w2", "w2": "w1"}[asked]
	if other == "" {
		t.Fatalf("the final names no checked worker: %v", final)
	}
	if code := checked[asked].stop(t); code != 0 {
		t.Fatalf("stopping %s: exit %d", asked, code)
	}
	out, se, code := toolctl(t, w0.url, "approve", "c1", "--by", "alice")
	if code != 0 || !strings.Contains(out, "approved call c1 of session s1: write_text_file") {
		t.Fatalf("approve: exit %d\n%s%s", code, out, se)
	}

	// A re-send with another input is rejected and leaves the approval.
	final, code = callJSON(t, w0.url, "--session", "s1", "--id", "c1", "write_text_file", write("something else"))
	if code != 3 || final["code"] != "denied" {
		t.Errorf("replay with changed input: exit %d, final %v; want denied", code, final)
	}
	// The same call runs, on the other worker, once.
	final, code = callJSON(t, w0.url, "--session", "s1", "--id", "c1", "write_text_file", write("hello"))
	if code != 0 || metaOf(final, "worker") != other {
		t.Fatalf("re-sent call: exit %d, final %v; want success on %s", code, final, other)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "hello" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	final, code = callJSON(t, w0.url, "--session", "s1", "--id", "c1", "write_text_file", write("hello"))
	if code != 3 || final["code"] != "approval_required" {
		t.Errorf("second re-send: exit %d, final %v; want approval_required (the approval is used up)", code, final)
	}

	// Bad input to approve and allow.
	bad := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"approve"}, 2, "approve takes one call id"},
		{[]string{"approve", "never-asked"}, 1, `no call "never-asked" is waiting for approval`},
		{[]string{"allow", "write_text_file"}, 2, "allow needs --session"},
		{[]string{"allow", "--session", "s1"}, 2, "allow takes one or more rules"},
		{[]string{"allow", "--session", "s1", "rm -rf"}, 2, "invalid rule"},
		{[]string{"mode", "--session", "s1", "careless"}, 2, `unknown mode "careless"`},
		{[]string{"mode", "explore"}, 2, "mode needs --session"},
	}
	for _, b := range bad {
		_, se, code := toolctl(t, w0.url, b.args...)
		if code != b.code || !strings.Contains(se, b.want) {
			t.Errorf("toolctl %v: exit %d, stderr %q; want exit %d and %q", b.args, code, se, b.code, b.want)
		}
	}

	// An allow rule: the session's calls run without asking.
	if out, se, code := toolctl(t, w0.url, "allow", "--session", "s1", "write_text_file:"+filepath.Join(ws, "*.txt")); code != 0 {
		t.Fatalf("allow: exit %d\n%s%s", code, out, se)
	}
	if final, code := callJSON(t, w0.url, "--session", "s1", "write_text_file", write("by rule")); code != 0 {
		t.Errorf("call under an allow rule: exit %d, %v", code, final)
	}
	if final, code := callJSON(t, w0.url, "--session", "s2", "write_text_file", write("other session")); code != 3 || final["code"] != "approval_required" {
		t.Errorf("another session: exit %d, %v; want approval_required", code, final)
	}
	// The worker-wide deny rule.
	if final, code := callJSON(t, w0.url, "--session", "s1", "execute_python_code", `{"code":"print(1)"}`); code != 3 || final["code"] != "denied" {
		t.Errorf("denied tool: exit %d, %v", code, final)
	}

	// Listings: the tool denied by the workers' rule is hidden (they
	// announce it); explore mode hides every tool that is never read-only.
	// A session's mode not set yet is said so.
	if out, _, code := toolctl(t, w0.url, "mode", "--session", "reader"); code != 0 || !strings.Contains(out, "session reader: mode not set") {
		t.Errorf("mode of a new session: exit %d, %q", code, out)
	}
	if out, se, code := toolctl(t, w0.url, "mode", "--session", "reader", "explore"); code != 0 || !strings.Contains(out, "session reader: mode explore") {
		t.Fatalf("mode: exit %d\n%s%s", code, out, se)
	}
	listings := []struct {
		session string
		want    []string
	}{
		{"s1", []string{"sleep", "echo", "view_text_file", "write_text_file"}},
		{"reader", []string{"sleep", "echo", "view_text_file"}},
	}
	for _, l := range listings {
		out, se, code := toolctl(t, w0.url, "tools", "--session", l.session, "--json")
		var tools []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(out), &tools); err != nil || code != 0 {
			t.Fatalf("tools --session %s: exit %d, %v\n%s", l.session, code, err, se)
		}
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, l.want) {
			t.Errorf("tools --session %s = %v, want %v", l.session, names, l.want)
		}
	}
	if final, code := callJSON(t, w0.url, "--session", "reader", "write_text_file", write("x")); code != 3 || final["code"] != "denied" {
		t.Errorf("write in explore mode: exit %d, %v; want denied", code, final)
	}
	if _, _, code := toolctl(t, w0.url, "call", "--session", "reader", "view_text_file", `{"file_path":"`+filepath.Join(ws, "notes.txt")+`"}`); code != 0 {
		t.Errorf("read in explore mode: exit %d", code)
	}
}
