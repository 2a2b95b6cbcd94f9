package main

import (
	"strings"
	"testing"
)

// TestCallerWithoutSession: approve and pending refuse --caller without
// --session, which named no session and was ignored: approve then looked
// for the call in every caller's sessions (and answered that it waits in
// several, the other caller's too), pending listed every session.
func TestCallerWithoutSession(t *testing.T) {
	for _, args := range [][]string{
		{"--nats", "nats://127.0.0.1:1", "approve", "--caller", "agent-1", "c1"},
		{"--nats", "nats://127.0.0.1:1", "pending", "--caller", "agent-1"},
	} {
		code, _, errs := toolctl(t, args...)
		if code != exitUsage || !strings.Contains(errs, "give --session too") {
			t.Errorf("toolctl %s: exit %d, want %d\n%s", strings.Join(args, " "), code, exitUsage, errs)
		}
	}
}
