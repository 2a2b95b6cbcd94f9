package main_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// authServer starts a TCP nats-server with JetStream on port (-1: any)
// that admits user fleet with password.
func authServer(t *testing.T, port int, store, password string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: store,
		Username: "fleet", Password: password,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(guard) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// TestReconnectsThroughAuthErrors: a worker reconnects forever (doc.go),
// also through a server that refuses its credentials for a while (a
// password rotated in two steps, a server restarted with an old
// configuration): nats.go's default closes the connection after two
// authorization errors, which left a worker serving nothing and never
// exiting, its /readyz 503 for good, and since it exits then, would end
// a worker that only had to wait. The worker stays up through the
// refusals, reconnects once the server admits it again, and serves.
func TestReconnectsThroughAuthErrors(t *testing.T) {
	w, url, port, get := refusedForAWhile(t)
	// The server admits the worker's password again.
	authServer(t, port, w.store, "s3cret")
	if _, ok := w.stderr.wait(func(l string) bool { return strings.Contains(l, "NATS reconnected") }); !ok {
		select {
		case <-w.done:
			t.Fatalf("the worker exited instead of reconnecting:\n%s", w.stderr)
		default:
			t.Fatalf("the worker did not reconnect within %v of the server admitting it again:\n%s", guard, w.stderr)
		}
	}
	// Its subscriptions reach the server after the reconnect: ask until
	// the call is served.
	deadline := time.Now().Add(guard)
	for {
		select {
		case <-w.done:
			t.Fatalf("the worker exited after reconnecting:\n%s", w.stderr)
		default:
		}
		code, body := get("/readyz")
		if code == http.StatusOK {
			if _, _, c := toolctl(t, url, "--user", "fleet", "--password", "s3cret", "call", "echo", `{"text":"after"}`); c == 0 {
				return // reconnected and serving
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker reconnected but did not serve within %v: /readyz %d %q\nworker log:\n%s", guard, code, body, w.stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// authWorker is a worker started by refusedForAWhile.
type authWorker struct {
	*worker
	store string
}

// refusedForAWhile starts a password-protected server and a worker
// (--http, JSON logs) joined to it, then restarts the server on the same
// port with another password until the worker has been refused a few
// times, and shuts it down again. It returns the worker, the URL, the port
// and a GET of the worker's operator endpoint.
func refusedForAWhile(t *testing.T) (*authWorker, string, int, func(string) (int, string)) {
	t.Helper()
	store := t.TempDir()
	s1 := authServer(t, -1, store, "s3cret")
	url := s1.ClientURL()
	port := s1.Addr().(*net.TCPAddr).Port
	w, _, get := opsEndpoint(t, "--nats", url, "--user", "fleet", "--password", "s3cret", "--instance", "authz")
	if out, se, code := toolctl(t, url, "--user", "fleet", "--password", "s3cret", "call", "echo", `{"text":"before"}`); code != 0 {
		t.Fatalf("echo before: %d %s %s", code, out, se)
	}
	s1.Shutdown()
	s1.WaitForShutdown()
	s2 := authServer(t, port, store, "rotated")
	if _, ok := w.stderr.wait(func(l string) bool { return strings.Contains(l, "NATS connection lost") }); !ok {
		t.Fatalf("the worker did not notice:\n%s", w.stderr)
	}
	// Refused more than twice (nats.go's default gives up after two
	// authorization errors): each refused reconnect is logged.
	refused := 0
	if _, ok := w.stderr.wait(func(l string) bool {
		if strings.Contains(strings.ToLower(l), "authorization violation") {
			refused++
		}
		return refused > 2
	}); !ok {
		select {
		case <-w.done:
			t.Fatalf("the worker exited after %d refusals instead of trying on:\n%s", refused, w.stderr)
		default:
			t.Fatalf("the worker, alive, was refused %d times, not more than twice, %v after the server changed its password:\n%s", refused, guard, w.stderr)
		}
	}
	_, body := get("/readyz")
	t.Logf("/readyz while refused: %q", body)
	s2.Shutdown()
	s2.WaitForShutdown()
	return &authWorker{worker: w, store: store}, url, port, get
}

// TestJSONLogsOnly: with --log-format json every line on stderr is a JSON
// object, nats.go's asynchronous errors (authorization violations, slow
// consumers, permission violations) included: they go through the
// worker's logger, not nats.go's default printer.
func TestJSONLogsOnly(t *testing.T) {
	w, _, _, _ := refusedForAWhile(t)
	for _, line := range strings.Split(w.stderr.String(), "\n") {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("not a JSON log line: %q", line)
		}
	}
}

// TestWorkspaceFlagAndPermissionWorkingDirs: permissions' working_dirs
// default to the workspace, also one given by --workspace (the default
// was worked out before the flag applied): accept_edits accepts an edit
// inside it, as with the workspace given in the file.
func TestWorkspaceFlagAndPermissionWorkingDirs(t *testing.T) {
	ws := t.TempDir()
	write := `{"file_path":"` + filepath.Join(ws, "a.txt") + `","content":"x"}`

	inFile := filepath.Join(t.TempDir(), "file.yaml")
	mustWrite(t, inFile, "builtins:\n  workspace: "+ws+"\n  shared_workspace: true\npermissions:\n  mode: accept_edits\n")
	w := startWorker(t, "--config", inFile)
	if out, se, code := toolctl(t, w.url, "call", "write_text_file", write); code != 0 {
		t.Fatalf("control, workspace in the file: exit %d %s %s", code, out, se)
	}
	w.stop(t)

	byFlag := filepath.Join(t.TempDir(), "flag.yaml")
	mustWrite(t, byFlag, "builtins:\n  shared_workspace: true\npermissions:\n  mode: accept_edits\n")
	w = startWorker(t, "--config", byFlag, "--workspace", ws)
	if out, se, code := toolctl(t, w.url, "call", "write_text_file", write); code != 0 {
		t.Fatalf("workspace by --workspace: an edit inside it is not accepted: exit %d\nstdout %q\nstderr %q", code, out, se)
	}
}

// TestWorkspaceFlagDenyRule: a deny rule's relative path pattern is
// relative to the working directory, the workspace by default, also one
// given by --workspace: a write into the denied directory is refused
// (it ran, the pattern resolved against the default data directory).
func TestWorkspaceFlagDenyRule(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := `{"file_path":"` + filepath.Join(ws, "secret", "x.txt") + `","content":"x"}`
	perms := "permissions:\n  allow: [write_text_file]\n  deny: [\"write_text_file:secret/**\"]\n"

	inFile := filepath.Join(t.TempDir(), "file.yaml")
	mustWrite(t, inFile, "builtins:\n  workspace: "+ws+"\n  shared_workspace: true\n"+perms)
	w := startWorker(t, "--config", inFile)
	if out, se, code := toolctl(t, w.url, "call", "write_text_file", write); code != 3 {
		t.Fatalf("control, workspace in the file: exit %d (want 3, denied) %s %s", code, out, se)
	}
	w.stop(t)

	byFlag := filepath.Join(t.TempDir(), "flag.yaml")
	mustWrite(t, byFlag, "builtins:\n  shared_workspace: true\n"+perms)
	w = startWorker(t, "--config", byFlag, "--workspace", ws)
	out, se, code := toolctl(t, w.url, "call", "write_text_file", write)
	if _, err := os.Stat(filepath.Join(ws, "secret", "x.txt")); err == nil || code != 3 {
		t.Fatalf("workspace by --workspace: the denied write ran: exit %d\nstdout %q\nstderr %q", code, out, se)
	}
}

// TestCheckConfigRefusesWhatStartWould: --check-config refuses (exit 2)
// what the worker could not start with (it exited 1 after connecting, or
// retried for two minutes): replicas on the one-node embedded server, a
// TTL under JetStream's 100ms, an --http that is not HOST:PORT, a NaN
// rate.
func TestCheckConfigRefusesWhatStartWould(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		args       []string
	}{
		{"durable.replicas on the embedded server", "durable:\n  replicas: 3\n", nil},
		{"permissions.kv_replicas on the embedded server", "permissions:\n  kv_replicas: 3\n", nil},
		{"state.session_ttl under 100ms", "state:\n  session_ttl: 50ms\n", nil},
		{"state.result_ttl under 100ms", "state:\n  result_ttl: 50ms\n", nil},
		{"permissions.approval_ttl under 100ms", "permissions:\n  approval_ttl: 50ms\n", nil},
		{"--http without a port", "", []string{"--http", "bogus"}},
		{"--http port out of range", "", []string{"--http", "127.0.0.1:99999"}},
		{"a rate limit of NaN calls per second", "middleware:\n  rate_limits:\n    - rate: .nan\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "w.yaml")
			mustWrite(t, cfg, tc.yaml)
			p := startProc(t, cleanEnv(t), workerBin, append([]string{"--check-config", "--config", cfg}, tc.args...)...)
			if code := p.exit(t); code != 2 {
				t.Errorf("--check-config: exit %d, want 2\nstdout: %s\nstderr: %s", code, p.stdout, p.stderr)
			}
		})
	}
}

// TestRefusedSessionTTLIsConfigError: a session_ttl JetStream would
// refuse is a configuration error, exit 2 at once, not a failure retried
// for two minutes as if the cluster were still starting.
func TestRefusedSessionTTLIsConfigError(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "w.yaml")
	mustWrite(t, cfg, "state:\n  session_ttl: 50ms\n")
	p := startProc(t, cleanEnv(t), workerBin, "--config", cfg, "--listen", "127.0.0.1:0", "--store-dir", filepath.Join(t.TempDir(), "js"))
	line, ok := p.stderr.wait(func(s string) bool {
		return strings.Contains(s, "retrying") || strings.Contains(s, "ready") || strings.Contains(s, "not started")
	})
	if ok && strings.Contains(line, "retrying") {
		t.Fatalf("a refused session_ttl is retried as a transient failure:\n%s", line)
	}
	if code := p.exit(t); code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, p.stderr)
	}
}

// TestDurationOnlyForCallsThatRan: toolbus_worker_call_duration_seconds
// times the calls that ran; a call answered overloaded (max_in_flight
// reached) never ran and is not in it (OnFinal's took is 0 for it).
func TestDurationOnlyForCallsThatRan(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "w.yaml")
	mustWrite(t, cfg, "middleware:\n  max_in_flight: 1\n")
	w, _, get := opsEndpoint(t, "--config", cfg)
	sleep := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":30}`)
	if _, ok := sleep.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress:\n%s", sleep.stderr)
	}
	if _, se, code := toolctl(t, w.url, "call", "echo", `{"text":"x"}`); code != 1 || !strings.Contains(se, "overloaded") {
		t.Fatalf("echo: exit %d %s", code, se)
	}
	_, metrics := get("/metrics")
	if !strings.Contains(metrics, `toolbus_worker_calls_total{code="overloaded",state="error",tool="echo"} `) {
		t.Fatalf("the overloaded call is not counted:\n%s", metrics)
	}
	// echo is read-only: toolctl tried it 3 times, each answered overloaded.
	if strings.Contains(metrics, `toolbus_worker_call_duration_seconds_count{tool="echo"}`) {
		t.Errorf("an echo call that never ran is in the duration histogram:\n%s", grepLines(metrics, "call_duration_seconds_count"))
	}
	sleep.cmd.Process.Signal(syscall.SIGINT)
	sleep.exit(t)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestGraceZeroInConfig: grace_period: 0s in the file interrupts the
// running calls at once, as --grace 0 does (it was replaced by the 30s
// default).
func TestGraceZeroInConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "w.yaml")
	mustWrite(t, cfg, "grace_period: 0s\n")
	w := startWorker(t, "--config", cfg)
	call := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":50}`)
	if _, ok := call.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress:\n%s", call.stderr)
	}
	start := time.Now()
	if code := w.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("grace_period: 0s: the stop took %v\n%s", d.Round(time.Second), grepLines(w.stderr.String(), "draining"))
	}
	call.exit(t)
}

// TestReplicasInFileWithNatsFlag: replicas in the file are checked
// against the servers the flags give (--nats), not the file's alone.
func TestReplicasInFileWithNatsFlag(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, "durable:\n  replicas: 3\npermissions:\n  kv_replicas: 3\n")
	p := startProc(t, cleanEnv(t), workerBin, "--config", cfg, "--nats", "nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224", "--kv-replicas", "3", "--check-config")
	if code := p.exit(t); code != 0 {
		t.Fatalf("--check-config with replicas 3 in the file and --nats: exit %d\n%s", code, p.stderr)
	}
}

// TestStateBoundMismatchWarned: a worker configured with another
// state.max_sessions than the existing groups bucket's says so at start,
// with the command that changes it (the first worker to make a bucket
// decides its bound).
func TestStateBoundMismatchWarned(t *testing.T) {
	store := filepath.Join(t.TempDir(), "js")
	start := func(yaml string) *proc {
		cfg := filepath.Join(t.TempDir(), "w.yaml")
		mustWrite(t, cfg, yaml)
		return startProc(t, cleanEnv(t), workerBin, "--config", cfg, "--listen", "127.0.0.1:0", "--store-dir", store)
	}
	stop := func(p *proc) {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.exit(t); code != 0 {
			t.Fatalf("exit %d\n%s", code, p.stderr)
		}
	}
	first := start("")
	if _, ok := first.stderr.wait(func(s string) bool { return strings.Contains(s, "ready") }); !ok {
		t.Fatalf("the first worker did not start:\n%s", first.stderr)
	}
	if strings.Contains(first.stderr.String(), "another number of sessions") {
		t.Errorf("a worker that made the bucket warns of its bound:\n%s", first.stderr)
	}
	stop(first)
	second := start("state:\n  max_sessions: 1000\n")
	line, ok := second.stderr.wait(func(s string) bool {
		return strings.Contains(s, "another number of sessions") || strings.Contains(s, "ready")
	})
	if !ok || !strings.Contains(line, "another number of sessions") || !strings.Contains(line, "--max-msgs 1000") {
		t.Errorf("no warning of the bucket's other bound before ready: %q\n%s", line, second.stderr)
	}
	stop(second)
}
