package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "host" {
		os.Exit(hostMain())
	}
}

// hostMain is a worker in a process of its own: it mounts a stdio server
// that does not exit on stdin EOF (as server-everything does not), prints
// the server's pid and waits to be killed.
func hostMain() int {
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	c, err := NewClient(ServerConfig{Name: "go", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "wedge"}}, nil)
	if err != nil {
		return 1
	}
	if err := c.Connect(context.Background()); err != nil {
		return 1
	}
	fmt.Println(c.current().cmd.Process.Pid)
	select {}
}

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
	t.Cleanup(func() { _ = ostest.Kill(pid, syscall.SIGKILL) })
	natstest.WaitFor(t, "the wrapped server to end after the failed connect", func() bool { return !alive(pid) })
}

// goroutinesIn counts the goroutines with fn (a "pkg.(*T).method("
// frame) on their stack.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), fn)
}

// Calls that find a stateful server's session gone while it is being
// connected share that attempt: a server that never answers the
// handshake failed each waiting call only after a connect of its own,
// one after another (the fifth call waited five ConnectTimeouts, 30s
// each by default, and started a fifth process).
func TestCallsShareAFailedConnect(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	cfg := ServerConfig{Name: "silent", Transport: TransportStdio, Command: "sh",
		Args: []string{"-c", "echo started >> " + starts + "; exec sleep 1000"}, ConnectTimeout: Duration(10 * time.Second)}
	c := newTestClient(t, cfg)
	ctx := testCtx(t)
	const calls = 5
	errs := make([]error, calls)
	var wg sync.WaitGroup
	call := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Call(ctx, "anything", nil, toolkit.WriterFuncs{})
		}()
	}
	call(0)
	natstest.WaitFor(t, "the server to start", func() bool { _, err := os.Stat(starts); return err == nil })
	for i := 1; i < calls; i++ {
		call(i)
	}
	natstest.WaitFor(t, "every call to wait for the session", func() bool { return goroutinesIn("mcp.(*Client).session(") >= calls })
	wg.Wait()
	for i, err := range errs {
		var te *toolkit.Error
		if !errors.As(err, &te) || te.Code != toolkit.CodeUnavailable {
			t.Errorf("call %d: %v, want unavailable", i, err)
		}
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "started"); n != 1 {
		t.Errorf("%d calls waiting on one connect started the server %d times, want once", calls, n)
	}
}

// A server that restarts (an upgrade, a crash) may come back with other
// tools, and it announces no tools/list_changed for that: the new
// session has seen no change. The worker re-lists when it reconnects,
// so its toolkit (and the fleet's announcement) follows; it kept the
// old tools for good, and calls of a tool the server no longer had went
// to it.
func TestReconnectReListsTools(t *testing.T) {
	p := startHTTPPeer(t, false)
	tk, _ := mount(t, ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url()})
	ctx := testCtx(t)
	if _, ok := tk.Get("mcp__go__late"); !ok {
		t.Fatal("mcp__go__late not registered")
	}
	// The restarted server: sessions forgotten, "late" gone, "added" new.
	srv := newTestServer(nil)
	srv.RemoveTools("late")
	sdk.AddTool(srv, &sdk.Tool{Name: "added", Description: "New in this version."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return textResult("added"), nil, nil
		})
	p.mu.Lock()
	p.handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	p.mu.Unlock()
	if r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "again"}); r.final.Text() != "again" {
		t.Fatalf("echo after the restart: %+v", r.final)
	}
	natstest.WaitFor(t, "the restarted server's tools in the toolkit", func() bool {
		_, added := tk.Get("mcp__go__added")
		_, late := tk.Get("mcp__go__late")
		return added && !late
	})
	if r := run(t, ctx, tk, "mcp__go__added", nil); r.final.Text() != "added" {
		t.Fatalf("the new tool: %+v", r.final)
	}
}

// A worker killed outright (SIGKILL, the OOM killer, a supervisor out of
// patience) runs no Close: its stdio servers were left running,
// re-parented to init, one more set at every restart. A server dies with
// the worker's process.
func TestStdioServerDiesWithWorker(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(exe)
	host.Env = append(os.Environ(), mountTestServerEnv+"=host")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		t.Fatalf("the host printed no server pid: %v", err)
	}
	t.Cleanup(func() { _ = ostest.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("server %d is not running", pid)
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	natstest.WaitFor(t, "the stdio server to end with its worker", func() bool { return !alive(pid) })
}
