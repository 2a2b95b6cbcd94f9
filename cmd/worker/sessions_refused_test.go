package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOperatorCommandsRefusedToCaller: the operator's commands (README:
// Roles) read or write every caller's state, which a caller's key may
// not. Refused, each exits 2 with the server's refusal and a hint naming
// the command among those that need the operator's key, and nothing
// else: no "context canceled" of the lookup the refusal ended, no "no
// worker serves" of the requests it dropped.
func TestOperatorCommandsRefusedToCaller(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	for _, c := range []struct {
		name string // as the hint names it
		args []string
	}{
		{"pending", []string{"pending"}},
		{"approve", []string{"approve", "call-1"}},
		{"deny", []string{"deny", "call-1"}},
		{"allow", []string{"allow", "--session", "s1", "echo"}},
		{"allow", []string{"allow", "--session", "s1", "--remove", "echo"}},
		{"mode", []string{"mode", "--session", "s1", "explore"}},
		{"mode", []string{"mode", "--session", "s1", "--unset"}},
		{"sessions", []string{"sessions"}},
		{"top", []string{"top", "--once"}},
		{"mcp-headers", []string{"mcp-headers", "search", "Authorization=Bearer x"}},
		{"mcp-headers", []string{"mcp-headers", "--instance", "secure-w", "search"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := append([]string{"--nkey", filepath.Join(f.auth, "caller-alice.nk"), "--identity", "alice"}, c.args...)
			_, se, code := toolctl(t, f.worker.url, args...)
			hint, other := "", ""
			for line := range strings.Lines(se) {
				switch {
				case strings.Contains(line, "need the operator's key"):
					hint = line
				case strings.HasPrefix(line, "toolctl: NATS: ") && strings.Contains(line, "Permissions Violation"):
				default:
					other += line
				}
			}
			if code != 2 || !strings.Contains(hint, " "+c.name+",") && !strings.Contains(hint, " "+c.name+" ") || other != "" {
				t.Fatalf("exit %d, want 2 with the refusal and a hint naming %s alone:\n%s", code, c.name, se)
			}
		})
	}
}
