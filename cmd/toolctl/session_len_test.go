package main

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
)

// TestLongSessionIsUsage: a --session too long to be a KV key is bad input
// (exit 2, naming --session and what to do), refused before anything is
// sent, by every command that takes one. Before, toolctl sent it:
// `call` ended "error (code unavailable)" ("could not read the active
// tool groups", as if the store were down) after the worker had tried,
// `groups set` likewise, the listings exited 1, and `mcp stdio` served a
// session whose tools it could not list. A session of the longest size
// that fits still works.
func TestLongSessionIsUsage(t *testing.T) {
	url := groupsFleet(t)
	fits := strings.Repeat("x", wire.MaxSessionKeyLen)
	if code, _, errs := toolctl(t, "--nats", url, "groups", "set", "--session", fits, "web"); code != exitOK {
		t.Fatalf("control: groups set with a session of %d bytes: exit %d: %s", len(fits), code, errs)
	}
	long := strings.Repeat("x", wire.MaxSessionKeyLen+1)
	for _, args := range [][]string{
		{"call", "--session", long, "search"},
		{"groups", "set", "--session", long, "web"},
		{"groups", "--session", long},
		{"tools", "--session", long},
		{"instructions", "--session", long},
		{"skills", "--session", long},
		{"state", "export", "--session", long},
		{"mode", "--session", long, "bypass"},
		{"allow", "--session", long, "search"},
		{"pending", "--session", long},
		{"mcp", "stdio", "--session", long},
		{"--identity", "bob", "call", "--session", long[:wire.MaxSessionKeyLen-3], "search"}, // bob.xxx… is over
	} {
		code, _, errs := toolctl(t, append([]string{"--nats", url}, args...)...)
		name := strings.Join(args[:2], " ")
		if code != exitUsage || !strings.Contains(errs, "--session") || !strings.Contains(errs, "shorter") {
			t.Errorf("toolctl %s with a session over the limit: exit %d, stderr %.300q; want exit %d naming --session and asking for a shorter one", name, code, errs, exitUsage)
		}
	}
}
