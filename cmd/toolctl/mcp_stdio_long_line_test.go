package main_test

import (
	"strings"
	"testing"
)

// TestMCPStdioLongLineAnswered: a stdin line over the 4 MiB bound (here
// over the go-sdk's own 16 MiB frame limit) is answered with a JSON-RPC
// error and skipped, as any other line that cannot be a request; the
// session and its calls go on. Before, the line was passed on to the
// go-sdk, which ended the session at its limit: `mcp stdio` exited 1
// ("inbound JSON-RPC frame exceeded the configured maximum line length"),
// the call in flight ended interrupted without its answer written, and
// the requests after the line were never read.
func TestMCPStdioLongLineAnswered(t *testing.T) {
	url := startMCPFleet(t)
	long := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("a", 17<<20) + `"}}}`
	stdout, stderr, err, exited := stdioAtEOF(t, url, mcpGuard,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":10}}}`,
		long,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
	if !exited || err != nil {
		t.Fatalf("exited %v, err %v; stderr:\n%s", exited, err, stderr)
	}
	for _, want := range []string{`"id":2,"result"`, `"id":3,"result"`, `"id":null,"error"`, `over the 4194304 a message may have`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %s:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	if strings.Contains(stdout, `"interrupted"`) {
		t.Errorf("a call was interrupted:\n%s", stdout)
	}
}
