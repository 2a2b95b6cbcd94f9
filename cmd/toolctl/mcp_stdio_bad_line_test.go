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
// written, and the requests after the line were never read. The error's
// id is that of the request the line holds, when it has a method and an
// id the server answers under as sent, else null: before, a request the
// go-sdk could not read (its params nested past the go-sdk's 1000 levels,
// say) was answered under id null, and its client waited for ever for an
// answer under its own id.
func TestMCPStdioBadLineAnswered(t *testing.T) {
	url := startMCPFleet(t)
	deep := strings.Repeat("[", 1500) + strings.Repeat("]", 1500)
	for _, c := range []struct{ bad, id string }{
		{"garbage", "null"},
		{"{}", "null"},
		{"5", "null"},
		{`{"jsonrpc":"1.0","id":9,"method":"ping"}`, "9"},
		{`{"jsonrpc":"2.0"}`, "null"},
		{"[]", "null"},
		{`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"echo","arguments":{"text":` + deep + `}}}`, `"deep"`},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":` + deep + `}`, "null"},
		{`{"jsonrpc":"2.0","id":9,"result":` + deep + `}`, "null"},
	} {
		name := c.bad
		if len(name) > 80 {
			name = name[:80]
		}
		t.Run(name, func(t *testing.T) {
			stdout, stderr, err, exited := stdioAtEOF(t, url, 20*time.Second,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":10}}}`,
				c.bad,
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
			if !exited || err != nil {
				t.Fatalf("exited %v, err %v; stderr:\n%s", exited, err, stderr)
			}
			for _, want := range []string{`"id":2,"result"`, `"id":3,"result"`, `"id":` + c.id + `,"error"`} {
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
