package main_test

import (
	"strings"
	"testing"
)

// TestMCPStdioDeepLineAnswered: a line nested deeper than JSON is read
// here (10000 levels) is answered with a parse error (-32700, id null)
// that says so, and skipped; the session goes on. Before, the error said
// only that the line was "not one JSON value", which it is, leaving its
// client to guess what was wrong with it.
func TestMCPStdioDeepLineAnswered(t *testing.T) {
	url := startMCPFleet(t)
	deep := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}}`
	stdout, stderr, err, exited := stdioAtEOF(t, url, mcpGuard, deep, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if !exited || err != nil {
		t.Fatalf("exited %v, err %v; stderr:\n%s", exited, err, stderr)
	}
	for _, want := range []string{`"id":null,"error":{"code":-32700`, "exceeded max depth", `"id":3,"result"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %s:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
}
