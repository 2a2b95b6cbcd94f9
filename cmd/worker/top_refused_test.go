package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTopRefusedToCaller: toolctl top with a caller's key, in a fleet with
// roles, exits 2 with the server's refusal and what key it needs, and no
// "context canceled" line: the refusal ended the command's context, and
// top printed that as an error of its own.
func TestTopRefusedToCaller(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	_, se, code := toolctl(t, f.worker.url, "--nkey", filepath.Join(f.auth, "caller-alice.nk"), "--identity", "alice", "top", "--once")
	if code != 2 || !strings.Contains(se, "need the operator's key") || strings.Contains(se, "context canceled") {
		t.Fatalf("exit %d, want 2 saying top needs the operator's key and nothing of a cancelled context:\n%s", code, se)
	}
}
