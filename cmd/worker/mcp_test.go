package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
)

// everythingEntry returns server-everything's entry point, installed
// under .testdeps by scripts/test; the test skips without it (fails under
// CI=true).
func everythingEntry(t *testing.T) string {
	t.Helper()
	skip := func(what string) {
		msg := what + " is not installed; run scripts/test (it installs testdata/npm/package.json into .testdeps/)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		skip("node")
	}
	p, err := filepath.Abs("../../.testdeps/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		skip("@modelcontextprotocol/server-everything")
	}
	return p
}

// TestMCPMount: a worker mounts server-everything over stdio from its
// config; its tools are listed and called through the bus.
func TestMCPMount(t *testing.T) {
	entry := everythingEntry(t)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, fmt.Sprintf(`mcp_servers:
  - name: everything
    command: node
    args: [%q, stdio]
    disable_tools: [toggle-simulated-logging]
    timeout: 1m
`, entry))

	check := startProc(t, cleanEnv(t), workerBin, "--check-config", "--config", cfg)
	if code := check.exit(t); code != 0 || !strings.Contains(check.stdout.String(), "1 MCP server,") {
		t.Fatalf("--check-config: exit %d\n%s%s", code, check.stdout, check.stderr)
	}

	w := startWorker(t, "--config", cfg)
	out, se, code := toolctl(t, w.url, "tools", "--json")
	var tools []struct {
		Name     string `json:"name"`
		ReadOnly bool   `json:"read_only"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil || code != 0 {
		t.Fatalf("tools: exit %d, %v\n%s", code, err, se)
	}
	listed := map[string]bool{}
	for _, tl := range tools {
		listed[tl.Name] = true
	}
	for name, want := range map[string]bool{
		"mcp__everything__echo":                           true,
		"mcp__everything__get-sum":                        true,
		"mcp__everything__trigger-long-running-operation": true,
		"mcp__everything__toggle-simulated-logging":       false, // disabled
		"echo": true, // the built-ins are still there
	} {
		if listed[name] != want {
			t.Errorf("tool %s listed: %v, want %v", name, listed[name], want)
		}
	}

	calls := []struct {
		name, input string
		code        int
		stdout      string
	}{
		{"mcp__everything__echo", `{"message":"hello over the bus"}`, 0, "Echo: hello over the bus\n"},
		{"mcp__everything__get-sum", `{"a":2,"b":40}`, 0, "The sum of 2 and 40 is 42.\n"},
		{"mcp__everything__echo", `{}`, 1, ""}, // invalid input: the schema is the server's
	}
	for _, c := range calls {
		so, se, code := toolctl(t, w.url, "call", c.name, c.input)
		if code != c.code || (c.stdout != "" && so != c.stdout) {
			t.Errorf("call %s %s: exit %d (want %d), stdout %q (want %q)\n%s", c.name, c.input, code, c.code, so, c.stdout, se)
		}
	}

	// Progress notifications become progress lines on toolctl's stderr.
	_, se, code = toolctl(t, w.url, "call", "mcp__everything__trigger-long-running-operation", `{"duration":1,"steps":2}`)
	if code != 0 || strings.Count(se, "\n") < 2 {
		t.Errorf("long-running operation: exit %d, progress:\n%s", code, se)
	}

	// The runtime headers control operation answers (a stdio server takes
	// no headers, so it says why).
	nc, err := nats.Connect(w.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, c := range []struct{ body, want string }{
		{`{"server":"everything","headers":{"X-Token":"a"}}`, `"ok":false`},
		{`{"server":"nowhere","headers":{}}`, `"ok":false`},
		{`not json`, `undecodable request`},
	} {
		m, err := nc.RequestMsg(jsonControl(wire.HeadersSubject(w.instance), c.body), guard)
		if err != nil || !strings.Contains(string(m.Data), c.want) {
			t.Errorf("control request %s: %v, reply %s; want %s in it", c.body, err, m.Data, c.want)
		}
	}
}

// Server configurations that the mcp package rejects make --check-config
// fail with the reason and the line (the config checks each server with
// mcp.ServerConfig.Validate), and the worker would refuse to start.
func TestMCPCheckConfig(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"forbidden header", "mcp_servers:\n  - name: api\n    url: http://127.0.0.1:1/mcp\n    headers: {Host: evil.example}\n",
			`worker.yaml:4: mcp_servers[0].headers: header "Host" is managed by the HTTP or MCP transport and cannot be set`},
		{"empty tool name", "mcp_servers:\n  - name: fs\n    command: mcp-server-filesystem\n    enable_tools: [\"\"]\n",
			`worker.yaml:4: mcp_servers[0].enable_tools: contains an empty name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "worker.yaml")
			mustWrite(t, cfg, tt.yaml)
			p := startProc(t, cleanEnv(t), workerBin, "--check-config", "--config", cfg)
			if code := p.exit(t); code != 2 || !strings.Contains(p.stderr.String(), tt.want) {
				t.Errorf("--check-config: exit %d, stderr:\n%s\nwant exit 2 and %q", code, p.stderr, tt.want)
			}
		})
	}
}
