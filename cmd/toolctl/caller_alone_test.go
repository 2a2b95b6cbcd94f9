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

// TestCallerInvalid: --caller with what no caller identity can be
// ("a.b", "a b") is bad usage before connecting, as --identity is; mode
// and allow took it and set the mode or rules of a session no caller
// has ("session a.b/s1: mode bypass"), exit 0.
func TestCallerInvalid(t *testing.T) {
	for _, args := range [][]string{
		{"mode", "--caller", "a.b", "--session", "s1", "bypass"},
		{"allow", "--caller", "a b", "--session", "s1", "echo"},
		{"approve", "--caller", "a.b", "--session", "s1", "c1"},
		{"pending", "--caller", "a.b", "--session", "s1"},
	} {
		code, _, errs := toolctl(t, append([]string{"--nats", "nats://127.0.0.1:1"}, args...)...)
		if code != exitUsage || !strings.Contains(errs, "invalid caller identity") {
			t.Errorf("toolctl %s: exit %d, want %d\n%s", strings.Join(args, " "), code, exitUsage, errs)
		}
	}
}
