package main

import (
	"strings"
	"testing"
)

// TestMCPHeadersBadNamesAreUsage: a server name no worker can mount ("",
// "a.b": server names are letters, digits, '_' and '-') and --instance ""
// (--instance "$W" with W unset) are bad usage, before anything is sent.
// Before, the names were looked for in the fleet and reported as served by
// no worker (exit 1), and --instance "" replaced the headers on every live
// worker instead of the one meant.
func TestMCPHeadersBadNamesAreUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp-headers", "", "A=1"}, "invalid server name"},
		{[]string{"mcp-headers", "a.b", "A=1"}, "invalid server name"},
		{[]string{"mcp-headers", "--instance", "", "tracker", "A=1"}, "--instance needs"},
	} {
		code, _, errs := toolctl(t, append([]string{"--nats", "nats://127.0.0.1:1"}, tt.args...)...)
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("toolctl %q: exit %d, stderr %q; want exit %d and %q", tt.args, code, errs, exitUsage, tt.want)
		}
	}
}
