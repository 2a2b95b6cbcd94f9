package mcp

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// Helpers that start the real npm reference servers installed by
// scripts/test under .testdeps/. Without them (or without node) the tests
// skip, except under CI=true, where they fail.

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

func missingPeer(t *testing.T, what string) {
	t.Helper()
	msg := fmt.Sprintf("%s is not installed; run scripts/test (it installs testdata/npm/package.json into .testdeps/)", what)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// npmServer returns the entry point of an installed npm MCP server.
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		missingPeer(t, "node")
	}
	p := filepath.Join(repoRoot(t), ".testdeps", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		missingPeer(t, "@modelcontextprotocol/"+pkg)
	}
	return p
}

func everythingStdio(t *testing.T, name string) ServerConfig {
	t.Helper()
	return ServerConfig{Name: name, Transport: TransportStdio, Command: "node", Args: []string{npmServer(t, "server-everything"), "stdio"}}
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP runs server-everything in streamableHttp or sse mode
// on a free port and returns its base URL once it accepts connections.
func startEverythingHTTP(t *testing.T, mode string) string {
	t.Helper()
	entry := npmServer(t, "server-everything")
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		cmd := exec.Command("node", entry, mode)
		cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Time{} // port taken meanwhile: try another
				continue
			default:
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Cleanup(func() {
					_ = cmd.Process.Kill()
					<-exited
				})
				return "http://" + addr
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	t.Fatalf("server-everything %s did not start", mode)
	return ""
}

// newTestClient builds a Client and closes it at cleanup.
func newTestClient(t *testing.T, cfg ServerConfig) *Client {
	t.Helper()
	c, err := NewClient(cfg, &Options{RetryInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mount registers cfg's tools in a fresh toolkit.
func mount(t *testing.T, cfg ServerConfig) (*toolkit.Toolkit, *Client) {
	t.Helper()
	tk := toolkit.New(nil)
	c := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Register(ctx, tk); err != nil {
		t.Fatal(err)
	}
	return tk, c
}

// run calls a tool and collects its events; the final response is last.
type result struct {
	chunks   []toolkit.Chunk
	progress []toolkit.Progress
	final    *toolkit.Response
}

func run(t *testing.T, ctx context.Context, tk *toolkit.Toolkit, name string, input map[string]any) result {
	t.Helper()
	var r result
	for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "call-" + name, Name: name, Input: input}) {
		switch {
		case r.final != nil:
			t.Fatalf("event after the final response: %+v", ev)
		case ev.Chunk != nil:
			r.chunks = append(r.chunks, *ev.Chunk)
		case ev.Progress != nil:
			r.progress = append(r.progress, *ev.Progress)
		case ev.Final != nil:
			r.final = ev.Final
		}
	}
	if r.final == nil {
		t.Fatal("no final response")
	}
	return r
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a "never hangs" guard
	t.Cleanup(cancel)
	return ctx
}
