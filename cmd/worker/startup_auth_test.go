package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/auth"
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
