package main_test

import (
	"strings"
	"testing"
)

// TestMCPStdioBatchNotifications: under 2025-03-26, whose JSON-RPC
// batches `mcp stdio` serves, a batch's notifications are taken and its
// requests answered, in one array of their responses, whatever else the
// batch holds; the session and its calls go on. Before, the go-sdk took
// each notification of a batch for a request with no id: a batch of two
// ended the session ("duplicate message ID"), exit 1, the call in flight
// interrupted and the requests after it never read; a batch of a request
// and a notification waited for ever for the notification's answer, so
// the request's was never written; and after a batch of one
// notification, the next batch with one ended the session ("batch
// contains previously seen request").
func TestMCPStdioBatchNotifications(t *testing.T) {
	url := startMCPFleet(t)
	note := `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	// The drain would wait 10 min, far past the test's wait: only an
	// answer to every request lets the end of stdin end the session.
	stdout, stderr, err, exited := stdioAtEOFVersion(t, url, "2025-03-26", []string{"--drain", "10m"}, mcpGuard,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":10}}}`,
		"["+note+","+note+"]",
		"["+ping("10")+","+note+"]",
		"["+note+"]",
		"["+note+","+ping("11")+","+ping("12")+"]",
		ping("3"))
	if !exited || err != nil {
		t.Fatalf("exited %v, err %v: an answer was never written or the session ended\nstdout:\n%s\nstderr:\n%s", exited, err, stdout, stderr)
	}
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":2,"result"`,
		`[{"jsonrpc":"2.0","id":10,"result":{}}]`,
		`[{"jsonrpc":"2.0","id":11,"result":{}},{"jsonrpc":"2.0","id":12,"result":{}}]`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %s\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	for _, bad := range []string{`"error"`, `"interrupted"`} {
		if strings.Contains(stdout, bad) {
			t.Errorf("stdout has %s\nstdout:\n%s", bad, stdout)
		}
	}
	if strings.Contains(stderr, "dropped") {
		t.Errorf("warned of answers dropped:\n%s", stderr)
	}
}
