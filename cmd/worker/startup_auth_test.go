package main_test

import (
	"strings"
	"testing"
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
