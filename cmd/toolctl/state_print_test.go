package main

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestStateImportSessionPrintable: state import printed the session's
// name as it was given, where allow, mode, pending and sessions print a
// name with unprintable characters Go-quoted; a name holding terminal
// controls (from a script's variable, say) reached the terminal.
func TestStateImportSessionPrintable(t *testing.T) {
	url := groupsFleet(t)
	var out, errb strings.Builder
	code := run(natstest.Ctx(t), []string{"--nats", url, "state", "import", "--session", "s\x1b[2J1", "-"},
		strings.NewReader(`{"active_groups":["web"]}`), &out, &errb)
	if code != exitOK {
		t.Fatalf("state import: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `session "s\x1b[2J1": active groups [web]`) {
		t.Errorf("state import printed %q, want the session Go-quoted", out.String())
	}
	if r, bad := unprintable(out.String()); bad {
		t.Errorf("state import printed %q:\n%s", r, out.String())
	}
}
