package main_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestReadmeFlow is the README's first screen: a worker with no
// configuration, echo through toolctl, the built-ins listed, and a long
// sleep interrupted with Ctrl-C.
func TestReadmeFlow(t *testing.T) {
	w := startWorker(t)

	out, errOut, code := toolctl(t, w.url, "call", "echo", `{"text":"hi"}`)
	if code != 0 || out != "hi\n" {
		t.Fatalf("toolctl call echo: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	out, errOut, code = toolctl(t, w.url, "tools")
	if code != 0 {
		t.Fatalf("toolctl tools: exit %d, stderr %q", code, errOut)
	}
	for _, name := range []string{"echo", "sleep", "view_text_file", "write_text_file", "insert_text_file"} {
		if !regexp.MustCompile(`(?m)^` + name + `\s+basic\s`).MatchString(out) {
			t.Errorf("toolctl tools does not list %s in basic:\n%s", name, out)
		}
	}
	if strings.Contains(out, "execute_shell_command") {
		t.Errorf("the shell tool is on without a config:\n%s", out)
	}

	sleep := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":30}`)
	if _, ok := sleep.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress from sleep:\n%s", sleep.stderr)
	}
	if err := sleep.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := sleep.exit(t); code != 4 {
		t.Errorf("interrupted sleep: exit %d, want 4\nstderr:\n%s", code, sleep.stderr)
	}
	if !strings.Contains(sleep.stderr.String(), "ended interrupted (code interrupted)") {
		t.Errorf("stderr does not say interrupted:\n%s", sleep.stderr)
	}

	if code := w.stop(t); code != 0 {
		t.Errorf("worker exit %d after SIGTERM, want 0\n%s", code, w.stderr)
	}
}

// TestFleet runs one worker with the embedded server and two --nats
// workers, spreads 200 concurrent calls over them, then stops one under
// load: every call still gets exactly one final, from a worker.
func TestFleet(t *testing.T) {
	w0 := startWorker(t, "--instance", "w0")
	w1 := startWorker(t, "--instance", "w1", "--nats", w0.url)
	w2 := startWorker(t, "--instance", "w2", "--nats", w0.url, "--grace", "1s")

	nc, err := nats.Connect(w0.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := bus.NewClient(nc, &bus.ClientOptions{StallTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	// One outcome per call: how many finals it got and the last one.
	type outcome struct {
		finals   int
		final    *toolkit.Response
		progress bool
	}
	run := func(n int, seconds float64, started *sync.WaitGroup) []outcome {
		out := make([]outcome, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), guard)
				defer cancel()
				call := toolkit.ToolCall{Name: "sleep", Input: map[string]any{"seconds": seconds}}
				for ev := range c.Call(ctx, call) {
					if ev.Progress != nil && !out[i].progress {
						out[i].progress = true
						if started != nil {
							started.Done()
						}
					}
					if ev.Final != nil {
						out[i].finals++
						out[i].final = ev.Final
					}
				}
				if started != nil && !out[i].progress {
					started.Done()
				}
			})
		}
		wg.Wait()
		return out
	}
	byWorker := func(out []outcome) map[string]map[toolkit.Code]int {
		t.Helper()
		m := map[string]map[toolkit.Code]int{}
		for i, o := range out {
			if o.finals != 1 {
				t.Errorf("call %d got %d finals", i, o.finals)
				continue
			}
			id, _ := o.final.Metadata[wire.MetaWorker].(string)
			if m[id] == nil {
				m[id] = map[toolkit.Code]int{}
			}
			m[id][o.final.Code]++
		}
		return m
	}

	// 200 short calls: all succeed, and every worker served some.
	got := byWorker(run(200, 0.3, nil))
	for _, w := range []*worker{w0, w1, w2} {
		if got[w.instance][""] == 0 {
			t.Errorf("worker %s served no call: %v", w.instance, got)
		}
	}
	for id, codes := range got {
		for code, n := range codes {
			if code != "" {
				t.Errorf("%d calls on worker %q ended %q", n, id, code)
			}
		}
	}
	t.Logf("200 calls of 0.3s: %v", got)

	// toolctl lists the tools of the whole fleet.
	out, errOut, code := toolctl(t, w0.url, "tools", "--json")
	if code != 0 || !strings.Contains(out, `"instances": [
      "w0",
      "w1",
      "w2"
    ]`) {
		t.Errorf("toolctl tools --json: exit %d, stderr %q:\n%s", code, errOut, out)
	}

	// 200 calls of 4s; once all of them run (each reported progress),
	// SIGTERM w2 (grace 1s) and send 100 more.
	var started sync.WaitGroup
	started.Add(200)
	var long, more []outcome
	var wg sync.WaitGroup
	wg.Go(func() { long = run(200, 4, &started) })
	started.Wait()
	if err := w2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { more = run(100, 0.5, nil) })
	wg.Wait()
	if code := w2.exit(t); code != 0 {
		t.Errorf("w2 exit %d after SIGTERM, want 0\n%s", code, w2.stderr)
	}

	gotLong, gotMore := byWorker(long), byWorker(more)
	t.Logf("200 calls of 4s, w2 stopped: %v; 100 more calls of 0.5s: %v", gotLong, gotMore)
	// sleep is read-only: a call w2's drain cut (its grace is shorter
	// than the call) is sent again to w0 or w1 and ends there, its second
	// attempt; no call of 4s ends on w2 (a shorter one sent as w2 got its
	// SIGTERM may end there within the grace).
	resent := 0
	for _, o := range long {
		if o.final != nil && fmt.Sprint(o.final.Metadata[wire.MetaAttempts]) == "2" {
			resent++
		}
	}
	if resent == 0 {
		t.Errorf("no call on w2 was cut by its drain and sent again: %v", gotLong)
	}
	for _, m := range []map[string]map[toolkit.Code]int{gotLong, gotMore} {
		for id, codes := range m {
			for code, n := range codes {
				if code != "" {
					t.Errorf("%d calls on worker %q ended %q", n, id, code)
				}
			}
		}
	}
	if n := gotLong["w2"][""]; n > 0 {
		t.Errorf("%d calls of 4s ended on w2, whose grace (1s) was shorter", n)
	}
	if !strings.Contains(w2.stderr.String(), "grace period over") {
		t.Errorf("w2 did not log the end of its grace period:\n%s", w2.stderr)
	}
	if code := w1.stop(t); code != 0 {
		t.Errorf("w1 exit %d", code)
	}
	if code := w0.stop(t); code != 0 {
		t.Errorf("w0 exit %d", code)
	}
}

// TestConfigRejected: a bad config file or flag stops the worker before
// it starts anything, with exit code 2 and the place of each problem.
func TestConfigRejected(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknown := write("unknown.yaml", "instance: w1\ngroups: []\nbogus: 1\n")
	badValue := write("bad.yaml", "grace_period: soon\nlog_format: xml\n")
	badGroup := write("group.yaml", "builtins:\n  tools:\n    - name: echo\n      group: nowhere\n")
	missing := filepath.Join(dir, "missing.yaml")

	tests := []struct {
		name string
		args []string
		env  []string
		want []string // in stderr
	}{
		{"unknown key", []string{"--config", unknown}, nil,
			[]string{unknown + `:3: bogus: unknown key "bogus"`}},
		{"bad values", []string{"--config", badValue}, nil,
			[]string{badValue + `:1: grace_period: invalid value "soon"`, badValue + `:2: log_format: invalid value "xml"`}},
		{"unknown group", []string{"--config", badGroup}, nil,
			[]string{badGroup + `:4: builtins.tools[0].group:`, "nowhere"}},
		{"missing file", []string{"--config", missing}, nil,
			[]string{missing + ": cannot read the config file: no such file"}},
		{"bad --nats", []string{"--nats", "http://example.com"}, nil,
			[]string{`flag --nats: nats.urls[0]: invalid URL "http://example.com"`}},
		{"bad NATS_URL", nil, []string{"NATS_URL=ftp://x"},
			[]string{`env NATS_URL: nats.urls[0]: invalid URL "ftp://x"`}},
		{"bad --log-format", []string{"--log-format", "xml"}, nil,
			[]string{`flag --log-format: log_format: invalid value "xml"`}},
		{"bad --queue", []string{"--queue", "a.b"}, nil,
			[]string{`flag --queue: queue_group: invalid queue group "a.b"`}},
		{"bad --kv-replicas", []string{"--nats", "nats://127.0.0.1:1", "--kv-replicas", "7"}, nil,
			[]string{"flag --kv-replicas: replicas must be 1 to 5, got 7"}},
		{"replicas on the embedded server", []string{"--kv-replicas", "3"}, nil,
			[]string{"flag --kv-replicas: 3 replicas need a NATS cluster"}},
		{"missing credentials", []string{"--nats", "nats://127.0.0.1:1", "--creds", filepath.Join(dir, "none.creds")}, nil,
			[]string{"flag --creds: nats.credentials:"}},
		{"two ways to authenticate", []string{"--nats", "nats://127.0.0.1:1", "--user", "u", "--password", "p", "--token", "t"}, nil,
			[]string{"more than one way to authenticate"}},
		{"negative --grace", []string{"--grace", "-1s"}, nil,
			[]string{"flag --grace: grace_period:"}},
		{"an argument", []string{"serve"}, nil,
			[]string{`unexpected argument "serve"`}},
		{"unknown flag", []string{"--bogus"}, nil,
			[]string{"flag provided but not defined: -bogus"}},
	}
	for _, tt := range tests {
		for _, check := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/check=%v", tt.name, check), func(t *testing.T) {
				// Should a bad case pass, the worker must not take 4222.
				args := append([]string{"--listen", "127.0.0.1:0"}, tt.args...)
				if check {
					args = append([]string{"--check-config"}, args...)
				}
				p := startProc(t, cleanEnv(t, tt.env...), workerBin, args...)
				if code := p.exit(t); code != 2 {
					t.Errorf("exit %d, want 2\nstderr:\n%s", code, p.stderr)
				}
				for _, w := range tt.want {
					if !strings.Contains(p.stderr.String(), w) {
						t.Errorf("stderr does not contain %q:\n%s", w, p.stderr)
					}
				}
				if strings.Contains(p.stderr.String(), "worker ready") {
					t.Errorf("the worker started:\n%s", p.stderr)
				}
			})
		}
	}

	t.Run("valid", func(t *testing.T) {
		p := startProc(t, cleanEnv(t), workerBin, "--check-config", "--config", "../../config/testdata/example.yaml")
		if code := p.exit(t); code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr)
		}
		if !strings.Contains(p.stdout.String(), "configuration OK: NATS at nats://10.0.0.1:4222") {
			t.Errorf("stdout:\n%s", p.stdout)
		}
	})
}

// TestWorkspaceConfinement: the file tools, called through the bus, stay
// inside the configured workspace.
func TestWorkspaceConfinement(t *testing.T) {
	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(ws, "ok.txt"), "inside\n")
	mustWrite(t, filepath.Join(outside, "secret.txt"), "secret\n")
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, "worker.yaml")
	mustWrite(t, cfg, "builtins:\n  workspace: "+ws+"\n")
	w := startWorker(t, "--config", cfg)

	view := func(p string) string { return fmt.Sprintf(`{"file_path":%q}`, p) }
	tests := []struct {
		name, tool, input string
		code              int
		stdout            string
	}{
		{"relative inside", "view_text_file", view("ok.txt"), 0, "1: inside"},
		{"absolute inside", "view_text_file", view(filepath.Join(ws, "ok.txt")), 0, "1: inside"},
		{"dot-dot", "view_text_file", view("../outside/secret.txt"), 3, "PathOutsideWorkspaceError"},
		{"absolute outside", "view_text_file", view(filepath.Join(outside, "secret.txt")), 3, "PathOutsideWorkspaceError"},
		{"symlink out", "view_text_file", view("link/secret.txt"), 3, "PathOutsideWorkspaceError"},
		{"write via dot-dot", "write_text_file", `{"file_path":"../outside/new.txt","content":"x"}`, 3, "PathOutsideWorkspaceError"},
		{"write via symlink", "write_text_file", `{"file_path":"link/new.txt","content":"x"}`, 3, "PathOutsideWorkspaceError"},
		{"insert outside", "insert_text_file", fmt.Sprintf(`{"file_path":%q,"content":"x","line_number":1}`, filepath.Join(outside, "secret.txt")), 3, "PathOutsideWorkspaceError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := toolctl(t, w.url, "call", tt.tool, tt.input)
			if code != tt.code || !strings.Contains(out, tt.stdout) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errOut, tt.code, tt.stdout)
			}
			if tt.code == 3 && !strings.Contains(errOut, "ended denied (code denied)") {
				t.Errorf("stderr %q does not say denied", errOut)
			}
		})
	}
	for _, f := range []string{"new.txt", "secret.txt"} {
		b, err := os.ReadFile(filepath.Join(outside, f))
		if f == "new.txt" && !os.IsNotExist(err) || f == "secret.txt" && string(b) != "secret\n" {
			t.Errorf("%s outside the workspace was touched: %q, %v", f, b, err)
		}
	}
}

// TestShellCancelKillsChildren: Ctrl-C on a shell call through the bus
// kills what the command started.
func TestShellCancelKillsChildren(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "worker.yaml")
	mustWrite(t, cfg, "builtins:\n  workspace: "+filepath.Join(root, "ws")+"\n  tools:\n    - name: echo\n    - name: execute_shell_command\n")
	w := startWorker(t, "--config", cfg)

	// The shell tool is in the exec group, inactive until the session
	// turns it on.
	out, errOut, code := toolctl(t, w.url, "call", "--session", "s1", "execute_shell_command", `{"command":"true"}`)
	if code != 1 || !strings.Contains(errOut, "code group_inactive") {
		t.Fatalf("shell before activation: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := toolctl(t, w.url, "groups", "set", "--session", "s1", "exec"); code != 0 || !strings.Contains(out, "activated tool group(s): exec") {
		t.Fatalf("groups set: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, _, code := toolctl(t, w.url, "groups", "--session", "s1"); code != 0 || !regexp.MustCompile(`(?m)^exec\s+yes\s+no\s`).MatchString(out) {
		t.Fatalf("groups --session s1: exit %d:\n%s", code, out)
	}

	for session, want := range map[string]bool{"s1": true, "s2": false} {
		out, errOut, code := toolctl(t, w.url, "tools", "--session", session)
		if code != 0 || strings.Contains(out, "execute_shell_command") != want || !strings.Contains(out, "echo") {
			t.Errorf("tools --session %s: exit %d, stderr %q:\n%s", session, code, errOut, out)
		}
	}

	p := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "--session", "s1", "execute_shell_command",
		`{"command":"sleep 300 & echo pid=$!; wait"}`)
	line, ok := p.stdout.wait(func(s string) bool { return strings.HasPrefix(s, "pid=") })
	if !ok {
		t.Fatalf("no pid line:\nstdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "pid="))
	if err != nil {
		t.Fatal(err)
	}
	if gone(pid) {
		t.Fatalf("the child %d is not running before the cancel", pid)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 4 {
		t.Errorf("exit %d, want 4\nstderr:\n%s", code, p.stderr)
	}
	deadline := time.Now().Add(guard)
	for !gone(pid) {
		if time.Now().After(deadline) {
			ostest.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child %d survived the cancel", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustWrite(t testing.TB, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSecondSignals: a second signal to a draining worker interrupts its
// calls at once (they still get their final), and a second Ctrl-C to a
// toolctl waiting for its interrupted final quits at once.
func TestSecondSignals(t *testing.T) {
	t.Run("worker", func(t *testing.T) {
		w := startWorker(t) // grace 30s
		call := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":50}`)
		if _, ok := call.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
			t.Fatalf("no progress:\n%s", call.stderr)
		}
		w.cmd.Process.Signal(syscall.SIGTERM)
		if _, ok := w.stderr.wait(func(s string) bool { return strings.Contains(s, "draining") }); !ok {
			t.Fatalf("no drain:\n%s", w.stderr)
		}
		w.cmd.Process.Signal(syscall.SIGTERM)
		if code := call.exit(t); code != 4 {
			t.Errorf("toolctl exit %d, want 4 (interrupted)\n%s", code, call.stderr)
		}
		if code := w.exit(t); code != 0 {
			t.Errorf("worker exit %d, want 0\n%s", code, w.stderr)
		}
		if log := w.stderr.String(); !strings.Contains(log, "second signal") || strings.Contains(log, "grace period over") {
			t.Errorf("worker log (want the second signal, not a grace period over):\n%s", log)
		}
	})
	t.Run("toolctl", func(t *testing.T) {
		w := startWorker(t)
		call := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":50}`)
		if _, ok := call.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
			t.Fatalf("no progress:\n%s", call.stderr)
		}
		// A stopped worker cannot answer the cancel.
		t.Cleanup(func() { w.cmd.Process.Signal(ostest.Cont) })
		freeze(t, w.cmd.Process)
		call.cmd.Process.Signal(syscall.SIGINT)
		if _, ok := call.stderr.wait(func(s string) bool { return strings.Contains(s, "cancelling call") }); !ok {
			t.Fatalf("no cancel:\n%s", call.stderr)
		}
		call.cmd.Process.Signal(syscall.SIGINT)
		if code := call.exit(t); code != 130 {
			t.Errorf("toolctl exit %d, want 130\n%s", code, call.stderr)
		}
	})
}

// TestMiddlewareFromConfig: the config's timeouts, rate limits and
// in-flight limit apply to calls through the bus.
func TestMiddlewareFromConfig(t *testing.T) {
	root := t.TempDir()
	limits := filepath.Join(root, "limits.yaml")
	mustWrite(t, limits, `
middleware:
  timeouts:
    sleep: 300ms
  rate_limits:
    - tools: [echo]
      key: global
      rate: 0.001    # a token every 1000s: the burst is all there is
      burst: 2
`)
	w := startWorker(t, "--config", limits)
	out, errOut, code := toolctl(t, w.url, "call", "sleep", `{"seconds":30}`)
	if code != 1 || !strings.Contains(errOut, "code timeout") || !strings.Contains(out, "300ms deadline") {
		t.Errorf("sleep past its timeout: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for i, want := range []int{0, 0, 1} {
		out, errOut, code := toolctl(t, w.url, "call", "echo", `{"text":"x"}`, "--session", fmt.Sprint("s", i))
		if code != want || want == 1 && !strings.Contains(errOut, "code overloaded") {
			t.Errorf("echo %d: exit %d, stdout %q, stderr %q; want exit %d", i, code, out, errOut, want)
		}
	}
	for i := range 3 { // the limit is on echo only
		if out, errOut, code := toolctl(t, w.url, "call", "sleep", `{"seconds":0}`); code != 0 {
			t.Errorf("sleep %d: exit %d, stdout %q, stderr %q", i, code, out, errOut)
		}
	}

	inflight := filepath.Join(root, "inflight.yaml")
	mustWrite(t, inflight, "middleware:\n  max_in_flight: 1\n")
	w1 := startWorker(t, "--config", inflight)
	sleep := startProc(t, cleanEnv(t), toolctlBin, "--nats", w1.url, "call", "sleep", `{"seconds":50}`)
	if _, ok := sleep.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress:\n%s", sleep.stderr)
	}
	out, errOut, code = toolctl(t, w1.url, "call", "echo", `{"text":"x"}`)
	if code != 1 || !strings.Contains(errOut, "code overloaded") {
		t.Errorf("echo beyond max_in_flight: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	sleep.cmd.Process.Signal(syscall.SIGINT)
	if code := sleep.exit(t); code != 4 {
		t.Errorf("sleep: exit %d\n%s", code, sleep.stderr)
	}
}

// TestAuth: a worker joins a server that requires a password, given by
// flag or environment, and toolctl reaches it the same way; a wrong
// password is reported at once, not retried.
func TestAuth(t *testing.T) {
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(),
		Username: "fleet", Password: "s3cret",
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(guard) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	url := s.ClientURL()

	p := startProc(t, cleanEnv(t, "NATS_URL="+url, "NATS_USER=fleet", "NATS_PASSWORD=s3cret"), workerBin, "--log-format", "json", "--instance", "authed")
	if _, ok := p.stderr.wait(func(s string) bool { return strings.Contains(s, `"toolbus worker ready"`) }); !ok {
		t.Fatalf("worker not ready:\n%s", p.stderr)
	}
	out, errOut, code := toolctl(t, url, "--user", "fleet", "--password", "s3cret", "call", "echo", `{"text":"authed"}`)
	if code != 0 || out != "authed\n" {
		t.Errorf("toolctl with the password: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := toolctl(t, url, "tools"); code != 2 || !strings.Contains(strings.ToLower(errOut), "authorization violation") {
		t.Errorf("toolctl without the password: exit %d, stderr %q", code, errOut)
	}

	bad := startProc(t, cleanEnv(t), workerBin, "--nats", url, "--user", "fleet", "--password", "wrong")
	if code := bad.exit(t); code != 1 || !strings.Contains(strings.ToLower(bad.stderr.String()), "authorization violation") {
		t.Errorf("worker with a wrong password: exit %d\n%s", code, bad.stderr)
	}
	if strings.Contains(bad.stderr.String(), "retrying") {
		t.Errorf("a wrong password was retried:\n%s", bad.stderr)
	}
}

// TestReconnect: a --nats worker outlives a restart of the server it
// joined and serves again once it is back.
func TestReconnect(t *testing.T) {
	store := filepath.Join(t.TempDir(), "js")
	w0 := startWorker(t, "--instance", "w0", "--listen", "127.0.0.1:0", "--store-dir", store)
	w1 := startWorker(t, "--instance", "w1", "--nats", w0.url)
	if code := w0.stop(t); code != 0 {
		t.Fatalf("w0 exit %d", code)
	}
	if _, ok := w1.stderr.wait(func(s string) bool { return strings.Contains(s, "NATS connection lost") }); !ok {
		t.Fatalf("w1 did not notice:\n%s", w1.stderr)
	}
	listen := strings.TrimPrefix(w0.url, "nats://")
	startWorker(t, "--instance", "w0b", "--listen", listen, "--store-dir", store)
	if _, ok := w1.stderr.wait(func(s string) bool { return strings.Contains(s, "NATS reconnected") }); !ok {
		t.Fatalf("w1 did not reconnect:\n%s", w1.stderr)
	}
	served := map[string]int{}
	for range 30 {
		out, errOut, code := toolctl(t, w0.url, "call", "-v", "echo", `{"text":"x"}`)
		if code != 0 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		for _, id := range []string{"w0b", "w1"} {
			if strings.Contains(errOut, `"worker":"`+id+`"`) {
				served[id]++
			}
		}
	}
	if served["w1"] == 0 || served["w0b"] == 0 {
		t.Errorf("calls served after the restart: %v", served)
	}
	if code := w1.stop(t); code != 0 { // before its server goes
		t.Errorf("w1 exit %d", code)
	}
}

// TestJoinLateServer: a worker started before its NATS server retries
// until the server is up, and its retry lines name the URL it tries (a
// wrong port is seen at once).
func TestJoinLateServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	p := startProc(t, cleanEnv(t), workerBin, "--nats", url, "--log-format", "json")
	if _, ok := p.stderr.wait(func(s string) bool { return strings.Contains(s, "connecting to NATS at "+url+": retrying") }); !ok {
		t.Fatalf("no retry:\n%s", p.stderr)
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if _, ok := p.stderr.wait(func(s string) bool { return strings.Contains(s, `"toolbus worker ready"`) }); !ok {
		t.Fatalf("not ready:\n%s", p.stderr)
	}
	if out, errOut, code := toolctl(t, url, "call", "echo", `{"text":"late"}`); code != 0 || out != "late\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exit(t); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestNoJetStream: against a NATS server without JetStream a worker says
// at once what is wrong and what to do; with --group-state memory it
// serves.
func TestNoJetStream(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.JetStream, o.DontListen, o.Host, o.Port = false, false, "127.0.0.1", server.RANDOM_PORT
	})
	url := s.ClientURL()
	start := time.Now()
	p := startProc(t, cleanEnv(t), workerBin, "--nats", url)
	if code := p.exit(t); code != 1 || !strings.Contains(p.stderr.String(), "has no JetStream") || !strings.Contains(p.stderr.String(), "--group-state memory") {
		t.Fatalf("exit %d\n%s", code, p.stderr)
	}
	if d := time.Since(start); d > guard/2 {
		t.Errorf("took %v to say there is no JetStream", d)
	}
	w := startWorker(t, "--nats", url, "--group-state", "memory")
	if out, se, code := toolctl(t, w.url, "call", "echo", `{"text":"no js"}`); code != 0 || strings.TrimSpace(out) != "no js" {
		t.Fatalf("a call with memory group state: exit %d\n%s%s", code, out, se)
	}
	w.stop(t)
	cfg := filepath.Join(t.TempDir(), "w.yaml")
	mustWrite(t, cfg, "state:\n  groups: memory\npermissions:\n  mode: default\n")
	p = startProc(t, cleanEnv(t), workerBin, "--nats", url, "--config", cfg)
	if code := p.exit(t); code != 2 || !strings.Contains(p.stderr.String(), "permissions section keeps its state in JetStream") {
		t.Fatalf("memory group state with permissions: exit %d\n%s", code, p.stderr)
	}
}

// TestStopWhileCutOff: a worker whose NATS server is gone stops within its
// grace period and a small constant, not after flush and goodbye timeouts.
func TestStopWhileCutOff(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", server.RANDOM_PORT })
	w := startWorker(t, "--nats", s.ClientURL(), "--grace", "1s")
	s.Shutdown()
	s.WaitForShutdown()
	if _, ok := w.stderr.wait(func(l string) bool { return strings.Contains(l, "NATS connection lost") }); !ok {
		t.Fatalf("the worker did not notice:\n%s", w.stderr)
	}
	start := time.Now()
	if code := w.stop(t); code != 0 {
		t.Errorf("exit %d\n%s", code, w.stderr)
	}
	if d := time.Since(start); d > 1*time.Second+5*time.Second {
		t.Errorf("stopping took %v with a 1s grace period\n%s", d, w.stderr)
	}
}
