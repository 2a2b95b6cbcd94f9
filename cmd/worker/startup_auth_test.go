package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/embedded"
)

// TestIdentityNotAWorkerFlag: --identity names the caller a client calls
// as; a worker calls as nobody, so it does not offer the flag.
func TestIdentityNotAWorkerFlag(t *testing.T) {
	p := startProc(t, cleanEnv(t), workerBin, "--identity", "alice", "--check-config")
	if code := p.exit(t); code != 2 || !strings.Contains(p.stderr.String(), "flag provided but not defined: -identity") {
		t.Fatalf("exit %d\n%s", code, p.stderr)
	}
	p = startProc(t, cleanEnv(t), workerBin, "-h")
	if code := p.exit(t); code != 0 || strings.Contains(p.stderr.String(), "-identity") {
		t.Fatalf("exit %d; the usage offers --identity:\n%s", code, p.stderr)
	}
}

// TestAuthRequired: a worker with no credentials for a server that admits
// only users with them (its embedded one with the roles of toolctl auth
// init, or another worker's) stops at once, exit 2, saying so on one line
// with the flags that give credentials, not a raw NATS error (it was "io:
// read/write on closed pipe" for the embedded server).
func TestAuthRequired(t *testing.T) {
	dir := t.TempDir()
	setup, err := auth.Init(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := func(t *testing.T, p *proc) {
		t.Helper()
		code := p.exit(t)
		out := strings.TrimSpace(p.stderr.String())
		if code != 2 || strings.Contains(out, "\n") || !strings.Contains(out, "requires authentication") ||
			!strings.Contains(out, "--nkey") || !strings.Contains(out, "--creds") {
			t.Fatalf("exit %d, want 2 and one line saying authentication is required and how to give it:\n%s", code, out)
		}
	}
	t.Run("embedded", func(t *testing.T) {
		for _, check := range []bool{false, true} {
			args := []string{"--server-config", setup.ServerConfig, "--listen", "127.0.0.1:0", "--store-dir", t.TempDir()}
			if check {
				args = append(args, "--check-config")
			}
			want(t, startProc(t, cleanEnv(t), workerBin, args...))
		}
	})
	t.Run("another worker's", func(t *testing.T) {
		w := startWorker(t, "--server-config", setup.ServerConfig, "--nkey", filepath.Join(dir, "worker.nk"))
		start := time.Now()
		want(t, startProc(t, cleanEnv(t), workerBin, "--nats", w.url, "--instance", "second"))
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("took %v", took)
		}
	})
}

// TestAuthWrongRole: a worker given a key whose role may not serve calls
// (a caller's, the gateway's) stops at once, exit 1, naming the
// permission it lacks and the role it needs; it waited on its retries
// (two minutes binding the group-state bucket).
func TestAuthWrongRole(t *testing.T) {
	dir := t.TempDir()
	setup, err := auth.Init(dir, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, "--server-config", setup.ServerConfig, "--nkey", filepath.Join(dir, "worker.nk"))
	for _, tt := range []struct{ name, seed string }{
		{"caller on another worker's", "caller-alice.nk"},
		{"gateway on another worker's", "gateway.nk"},
		{"caller on its embedded server", "caller-alice.nk"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--nkey", filepath.Join(dir, tt.seed), "--instance", "wrong-role"}
			if strings.Contains(tt.name, "embedded") {
				args = append(args, "--server-config", setup.ServerConfig, "--listen", "127.0.0.1:0", "--store-dir", t.TempDir())
			} else {
				args = append(args, "--nats", w.url)
			}
			start := time.Now()
			p := startProc(t, cleanEnv(t), workerBin, args...)
			code := p.exit(t)
			out := p.stderr.String()
			if code != 1 || !strings.Contains(out, "may not subscribe to") || !strings.Contains(out, "tools.cancel.>") || !strings.Contains(out, "worker.nk") {
				t.Fatalf("exit %d, want 1 naming the permission and the worker role's key:\n%s", code, out)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

// TestAuthMissingJetStreamPermission: a user that may take calls but not
// use the JetStream API (a hand-written configuration) stops after one
// attempt at binding the group-state bucket, naming the subject the
// server refused, not after two minutes of retries.
func TestAuthMissingJetStreamPermission(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "server.conf")
	mustWrite(t, conf, `authorization { users = [ {user: w, password: pw, permissions: {
  publish: ["_INBOX.>", "tools.>"], subscribe: ["tools.>", "_INBOX.>"] } } ] }
`)
	start := time.Now()
	p := startProc(t, cleanEnv(t, "NATS_PASSWORD=pw"), workerBin, "--server-config", conf, "--user", "w",
		"--listen", "127.0.0.1:0", "--store-dir", t.TempDir())
	code := p.exit(t)
	out := p.stderr.String()
	if code != 1 || !strings.Contains(out, "Permissions Violation for Publish to") || !strings.Contains(out, "$JS.API") ||
		!strings.Contains(out, "worker not started") {
		t.Fatalf("exit %d, want 1 naming the refused JetStream subject:\n%s", code, out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v", took)
	}
}

// TestTryLineCredentials: the start line's try= command works as it is
// pasted into a shell when the server wants credentials: with the roles
// of toolctl auth init it calls as a caller whose key lies beside the
// worker's, and with a user it gives the user and the password's
// variable (never the password).
func TestTryLineCredentials(t *testing.T) {
	dir := t.TempDir()
	setup, err := auth.Init(dir, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(t.TempDir(), "users.conf")
	mustWrite(t, users, "authorization { users = [ {user: w, password: s3cret} ] }\n")
	// A server of the fleet's, joined with the user and password in its URL.
	srv, err := embedded.Start(&embedded.Options{ConfigFile: users, Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	inURL := strings.Replace(srv.ClientURL(), "nats://", "nats://w:s3cret@", 1)
	for _, tt := range []struct {
		name     string
		env      []string
		args     []string
		want     string   // in the try line
		pasteEnv []string // besides env, for the pasted command
	}{
		{"roles", nil, []string{"--server-config", setup.ServerConfig, "--nkey", filepath.Join(dir, "worker.nk")},
			"--nkey " + filepath.Join(dir, "caller-alice.nk") + " --identity alice", nil},
		{"user", []string{"NATS_PASSWORD=s3cret"}, []string{"--server-config", users, "--user", "w"}, `--user w --password "$NATS_PASSWORD"`, nil},
		{"user in the URL", nil, []string{"--nats", inURL}, `--user w --password "$NATS_PASSWORD"`, []string{"NATS_PASSWORD=s3cret"}},
		{"IPv6 loopback", nil, []string{"--listen", "[::1]:0"}, `--nats 'nats://[::1]:`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--log-format", "json"}
			if !containsFlag(tt.args, "--nats") { // the embedded server's flags are refused beside --nats
				args = append(args, "--listen", "127.0.0.1:0", "--store-dir", t.TempDir())
			}
			args = append(args, tt.args...)
			p := startProc(t, cleanEnv(t, tt.env...), workerBin, args...)
			line, ok := p.stderr.wait(func(s string) bool { return strings.Contains(s, `"toolbus worker ready"`) })
			if !ok {
				t.Fatalf("not ready:\n%s", p.stderr)
			}
			var ready struct{ Try string }
			if err := json.Unmarshal([]byte(line), &ready); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ready.Try, tt.want) || strings.Contains(p.stderr.String(), "s3cret") {
				t.Fatalf("try=%q, want it with %q and no password in the log:\n%s", ready.Try, tt.want, p.stderr)
			}
			// A worker binary with toolctl beside it names that toolctl.
			cmd, ok := strings.CutPrefix(ready.Try, toolctlBin+" ")
			if !ok {
				t.Fatalf("try=%q, want it to run %s", ready.Try, toolctlBin)
			}
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			// As zsh, the macOS shell, pastes it: a glob that matches no
			// file is an error.
			sh := exec.CommandContext(ctx, "bash", "-O", "failglob", "-c", toolctlBin+" "+cmd)
			sh.Env = cleanEnv(t, append(tt.env, tt.pasteEnv...)...)
			out, err := sh.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "hi" {
				t.Fatalf("%s: %v\n%s", ready.Try, err, out)
			}
		})
	}
}

// TestAuthWorkerConfinedPermission: a worker whose NATS user may take
// calls only in its queue group ("tools.call.> toolbus", NATS's queue
// permission), or only some tools' calls (an operator's choice), is a
// worker: it starts and serves. The role check subscribes to what every
// worker takes, as the worker does.
func TestAuthWorkerConfinedPermission(t *testing.T) {
	for _, tt := range []struct{ name, subscribe string }{
		{"queue group", `"tools.call.> toolbus"`},
		{"some tools", `"tools.call.echo", "tools.call.echo.*"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			setup, err := auth.Init(dir, []string{"alice"})
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(setup.ServerConfig)
			if err != nil {
				t.Fatal(err)
			}
			conf := string(data)
			w := strings.Index(conf, "# worker\n")
			sub := strings.Index(conf[w:], "subscribe:")
			if w < 0 || sub < 0 {
				t.Fatalf("no worker user's subscribe permissions in\n%s", conf)
			}
			at := w + sub
			conf = conf[:at] + strings.Replace(conf[at:], `"tools.call.>"`, tt.subscribe, 1)
			confined := filepath.Join(dir, "confined.conf")
			mustWrite(t, confined, conf)
			wk := startWorker(t, "--server-config", confined, "--nkey", filepath.Join(dir, "worker.nk"))
			out, errOut, code := toolctl(t, wk.url, "--nkey", filepath.Join(dir, "caller-alice.nk"), "--identity", "alice", "call", "echo", `{"text":"hi"}`)
			if code != 0 || strings.TrimSpace(out) != "hi" {
				t.Fatalf("call: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// TestServerConfigListen: the embedded server listens where its server
// configuration says, and keeps JetStream where it says, unless the
// worker's flags or config file say otherwise (it listened on
// 127.0.0.1:4222 and kept JetStream in the data directory whatever the
// file said).
func TestServerConfigListen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	store := filepath.Join(dir, "js")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: %q\njetstream { store_dir: %q }\n", addr, store)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--log-format", "json", "--server-config", conf}
	w := ready(t, startProc(t, cleanEnv(t), workerBin, args...), args)
	if w.url != "nats://"+addr {
		t.Fatalf("the worker's server is at %s, want the configuration's %s", w.url, addr)
	}
	if _, err := os.Stat(filepath.Join(store, "jetstream")); err != nil {
		t.Fatalf("JetStream is not in the configuration's store_dir: %v", err)
	}
	w.stop(t)

	// A flag says more than the file.
	w = startWorker(t, "--server-config", conf, "--listen", "127.0.0.1:0", "--store-dir", filepath.Join(dir, "flag-js"))
	if w.url == "nats://"+addr {
		t.Fatalf("--listen 127.0.0.1:0 was ignored: the server is at %s", w.url)
	}
	if _, err := os.Stat(filepath.Join(dir, "flag-js", "jetstream")); err != nil {
		t.Fatalf("JetStream is not in --store-dir: %v", err)
	}
	w.stop(t)
}
