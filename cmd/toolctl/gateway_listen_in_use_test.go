package main

import (
	"net"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayListenInUse: mcp serve on an address another process holds
// said only "toolctl: listen tcp ADDR: bind: address already in use",
// naming neither the flag nor what to do; it now names --listen and how
// to pick another address.
func TestGatewayListenInUse(t *testing.T) {
	s := natstest.Embedded(t, true)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	code, _, errs := toolctl(t, "--nats", s.ClientURL(), "mcp", "serve", "--listen", addr)
	want := "toolctl: mcp serve cannot listen on --listen " + addr + ": listen tcp " + addr + ": bind: address already in use " +
		`(is another gateway running there? give another address with --listen ADDR; port 0 picks a free one, which the log line "MCP gateway listening" names)`
	if code != exitError || !strings.Contains(errs, want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %q", code, errs, exitError, want)
	}
}
