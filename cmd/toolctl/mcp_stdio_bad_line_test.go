package main_test

import (
	"strings"
	"testing"
	"time"
)

// TestMCPStdioBadLineAnswered: a line of stdin that is not a JSON-RPC
// message (not JSON, JSON that is not a message, another version) is
// answered with a JSON-RPC error and skipped; the session goes on. Before,
// the go-sdk ended the session at such a line: `mcp stdio` exited 1 with
// the decoder's error ("invalid character 'g' looking for beginning of
// value"), the calls in flight ended interrupted with their answers never
// written, and the requests after the line were never read.
func TestMCPStdioBadLineAnswered(t *testing.T) {
	url := startMCPFleet(t)
	for _, bad := range []string{"garbage", "{}", "5", `{"jsonrpc":"1.0","id":9,"method":"ping"}`, `{"jsonrpc":"2.0"}`, "[]"} {
		t.Run(bad, func(t *testing.T) {
			stdout, stderr, err, exited := stdioAtEOF(t, url, 20*time.Second,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":10}}}`,
				bad,
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
			if !exited || err != nil {
				t.Fatalf("exited %v, err %v; stderr:\n%s", exited, err, stderr)
			}
			for _, want := range []string{`"id":2,"result"`, `"id":3,"result"`, `"id":null,"error"`} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %s:\n%s\nstderr:\n%s", want, stdout, stderr)
				}
			}
			if strings.Contains(stdout, `"interrupted"`) {
				t.Errorf("a call was interrupted:\n%s", stdout)
			}
		})
	}
}
