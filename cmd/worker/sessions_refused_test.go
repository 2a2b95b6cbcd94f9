package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsRefusedToCaller: toolctl sessions lists every caller's
// pins, which a caller's key may not read. Refused, it exits 2 and its
// hint names sessions among the commands that need the operator's key
// (it named the others only), with no "context canceled" line of the
// bucket lookup the refusal ended.
func TestSessionsRefusedToCaller(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	_, se, code := toolctl(t, f.worker.url, "--nkey", filepath.Join(f.auth, "caller-alice.nk"), "--identity", "alice", "sessions")
	var hint string
	for line := range strings.Lines(se) {
		if strings.Contains(line, "need the operator's key") {
			hint = line
		}
	}
	if code != 2 || !strings.Contains(hint, " sessions,") || strings.Contains(se, "context canceled") {
		t.Fatalf("exit %d, want 2 saying sessions needs the operator's key and nothing of a cancelled context:\n%s", code, se)
	}
}
