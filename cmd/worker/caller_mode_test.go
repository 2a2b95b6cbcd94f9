package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A caller reads its own sessions' policy (the caller role may): `toolctl
// mode --session S` with a caller's key shows its mode and rules; it
// opened the approvals bucket too, which a caller may not, and failed
// saying mode needs the operator's key. Setting a mode stays the
// operator's.
func TestCallerShowsOwnMode(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	operator := []string{"--nkey", filepath.Join(f.auth, "operator.nk")}
	alice := []string{"--nkey", filepath.Join(f.auth, "caller-alice.nk"), "--identity", "alice"}
	if out, se, code := toolctl(t, f.url, append(operator, "mode", "--caller", "alice", "--session", "s", "explore")...); code != 0 {
		t.Fatalf("operator's mode: exit %d\n%s%s", code, out, se)
	}
	out, se, code := toolctl(t, f.url, append(alice, "mode", "--session", "s")...)
	if code != 0 || !strings.Contains(out, "mode explore") {
		t.Fatalf("alice showing her session's mode: exit %d, want 0 and mode explore\n%s%s", code, out, se)
	}
	if out, se, code := toolctl(t, f.url, append(alice, "mode", "--session", "s", "bypass")...); code == 0 {
		t.Fatalf("alice setting her session's mode: exit 0, want refused\n%s%s", out, se)
	}
}
