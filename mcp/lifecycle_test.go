package mcp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// A stdio server started through a wrapper script that never answers the
// handshake (stuck loading, say) and ignores stdin EOF: the connect fails
// at ConnectTimeout and the go-sdk signals the wrapper alone, so the
// server itself, a grandchild, ran on, and the background retry started
// another every interval. A failed connect ends the whole process group.
func TestFailedConnectEndsWrappedServer(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "server.pid")
	script := filepath.Join(dir, "run-server.sh")
	body := "#!/bin/bash\nsleep 1000 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, ServerConfig{Name: "stuck", Transport: TransportStdio, Command: script, ConnectTimeout: Duration(time.Second)})
	err := c.Connect(testCtx(t))
	if err == nil {
		t.Fatal("Connect to a server that never answers succeeded")
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("the wrapper never started its server: %v (connect: %v)", rerr, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	natstest.WaitFor(t, "the wrapped server to end after the failed connect", func() bool { return !alive(pid) })
}
