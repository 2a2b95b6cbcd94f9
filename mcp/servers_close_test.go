package mcp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// A stdio server that ignores stdin EOF (server-everything does) is
// signalled only after the close has waited for it (2s for a stateful
// one). Servers.Close closed the servers one after another, so a worker
// with several such servers took that long for each of them to stop.
// They are closed at once: n of them take about the time of one, and at
// any rate less than n times the wait each must sit out.
func TestServersCloseConcurrently(t *testing.T) {
	const n = 4
	const perServer = 2 * time.Second // the stateful TerminateDuration (session.go)
	var cfgs []ServerConfig
	for i := range n {
		cfgs = append(cfgs, wedgeStdio(t, fmt.Sprintf("s%d", i)))
	}
	tk := toolkit.New(nil)
	s, err := Mount(testCtx(t), tk, cfgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Clients() {
		if !c.Up() {
			t.Fatalf("server %s is not up", c.Name())
		}
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	took := time.Since(start)
	t.Logf("closing %d servers that ignore stdin EOF took %v", n, took.Round(time.Millisecond))
	if took >= n*perServer {
		t.Errorf("closing %d servers that ignore stdin EOF took %v, want well under %v (they close at once)", n, took.Round(time.Millisecond), n*perServer)
	}
	for _, c := range s.Clients() {
		if len(c.Tools()) != 0 {
			t.Errorf("server %s still has tools registered after Close: %v", c.Name(), c.Tools())
		}
	}
	for _, tool := range tk.Tools() {
		if strings.HasPrefix(tool.Name, "mcp__") {
			t.Errorf("toolkit still has %s after Close", tool.Name)
		}
	}
}
