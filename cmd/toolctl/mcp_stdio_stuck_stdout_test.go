package main_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMCPStdioSIGTERMStuckStdout: on SIGTERM `toolctl mcp stdio` exits
// even when its client has stopped reading stdout. Before, the answers
// it was writing blocked on the full pipe, the go-sdk's session close
// waited for them, and the process never exited (a host that stops
// reading, then asks its server to stop, had to kill it).
func TestMCPStdioSIGTERMStuckStdout(t *testing.T) {
	url := startMCPFleet(t)
	cmd := exec.Command(toolctlBinary(t), "mcp", "stdio")
	cmd.Env = mcpEnv(t, url)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	// stdout is a pipe nobody reads: its buffer (64 KiB) fills.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var se strings.Builder
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = w, lockedWriter{&mu, &se}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	const calls = 8 // their answers (200 KB each) are more than the pipe holds
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	for i := range calls {
		in += fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`+"\n", 10+i, strings.Repeat("b", 200<<10))
	}
	go io.WriteString(stdin, in)
	deadline := time.Now().Add(mcpGuard)
	for {
		mu.Lock()
		ran := strings.Count(se.String(), "tool=echo")
		mu.Unlock()
		if ran == calls {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls ran\n%s", ran, calls, se.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v, want 0\n%s", err, se.String())
		}
	case <-time.After(mcpGuard):
		t.Fatal("toolctl mcp stdio did not stop on SIGTERM while its stdout was not read")
	}
}
