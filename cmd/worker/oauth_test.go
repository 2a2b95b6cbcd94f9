package main_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/oauthtest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestMCPOAuthLogin is an operator's day with an MCP server behind OAuth:
// the worker mounting it says it needs a login; `toolctl mcp login`
// prints the URL, the person's browser comes back with the code; the
// worker picks the grant up at once, a second worker uses the same grant
// (one authorization for the fleet), both refresh the expiring token
// without spending a refresh token twice; `toolctl mcp logout` deletes the
// grant.
func TestMCPOAuthLogin(t *testing.T) {
	as := oauthtest.Start(t)
	as.SetTokenTTL(time.Second) // every token is about to expire: workers refresh on every request
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://" + l.Addr().String() + "/callback"
	l.Close()
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, fmt.Sprintf("mcp_servers:\n  - name: tracker\n    url: %s\n    oauth: {redirect_url: %q}\n", as.URL, redirect))

	w1 := startWorker(t, "--config", cfg, "--instance", "ow1")
	if _, ok := w1.stderr.wait(func(s string) bool { return strings.Contains(s, "needs authorization") }); !ok {
		t.Fatalf("the worker did not say the server needs a login:\n%s", w1.stderr)
	}
	if _, se, code := toolctl(t, w1.url, "call", "mcp__tracker__whoami"); code == 0 {
		t.Fatalf("a call before the login succeeded:\n%s", se)
	}

	login := startProc(t, cleanEnv(t), toolctlBin, "--nats", w1.url, "--config", cfg, "mcp", "login", "tracker")
	line, ok := login.stderr.wait(func(s string) bool { return strings.Contains(s, "/authorize?") })
	if !ok {
		t.Fatalf("login printed no authorization URL:\n%s", login.stderr)
	}
	authURL := regexp.MustCompile(`http://\S+`).FindString(line)
	resp, err := http.Get(authURL) // the browser: the server approves and sends it back to login
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "toolbus received the authorization") {
		t.Errorf("the browser's page: %s", page)
	}
	if code := login.exit(t); code != 0 || !strings.Contains(login.stdout.String(), `MCP server "tracker" authorized: 1 tools`) {
		t.Fatalf("login: exit %d\n%s\n%s", code, login.stdout, login.stderr)
	}
	if _, ok := w1.stderr.wait(func(s string) bool { return strings.Contains(s, "MCP server is back") }); !ok {
		t.Fatalf("the worker did not pick the grant up:\n%s", w1.stderr)
	}
	w2 := startWorker(t, "--nats", w1.url, "--config", cfg, "--instance", "ow2")
	if _, ok := w2.stderr.wait(func(s string) bool { return strings.Contains(s, `"MCP server mounted"`) }); !ok {
		t.Fatalf("the second worker did not mount the server with the stored grant:\n%s", w2.stderr)
	}

	c, err := bus.NewClient(natstest.URLConn(t, w1.url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	workers := map[string]int{}
	for i := range 30 {
		final := c.Invoke(ctx, toolkit.ToolCall{Name: "mcp__tracker__whoami", Session: fmt.Sprint("s", i)})
		if final.State != toolkit.StateSuccess || final.Text() != "client client-1" {
			t.Fatalf("call %d: %s %s %q", i, final.State, final.Code, final.Text())
		}
		w, _ := final.Metadata["worker"].(string)
		workers[w]++
	}
	if len(workers) != 2 {
		t.Logf("calls by worker: %v (the queue group sent them all to one)", workers)
	}
	if n := as.Authorizations.Load(); n != 1 {
		t.Errorf("%d authorizations for the fleet, want 1", n)
	}
	if n := as.Reuses.Load(); n != 0 {
		t.Errorf("a spent refresh token was presented %d times", n)
	}
	if n := as.Refreshes.Load(); n == 0 {
		t.Error("no refresh of the expiring token")
	}

	if so, se, code := toolctl(t, w1.url, "--config", cfg, "mcp", "logout", "tracker"); code != 0 || !strings.Contains(so, "deleted") {
		t.Errorf("logout: exit %d\n%s%s", code, so, se)
	}
	if _, se, code := toolctl(t, w1.url, "--config", cfg, "mcp", "login", "nowhere"); code != 2 || !strings.Contains(se, "has tracker") {
		t.Errorf("login of an unknown server: exit %d\n%s", code, se)
	}
}
