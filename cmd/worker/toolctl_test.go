package main_test

// toolctl's own tests live here, next to the worker they need: the binaries
// are built once, in this package's TestMain.

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/toolkit"
)

func TestToolctl(t *testing.T) {
	w := startWorker(t, "--instance", "solo")
	dir := t.TempDir()
	input := filepath.Join(dir, "input.json")
	mustWrite(t, input, `{"text":"from a file"}`)
	state := filepath.Join(dir, "state.json")
	mustWrite(t, state, `{"active_groups":["exec"]}`)

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // contained in stdout
		stderr string // contained in stderr
	}{
		{"no command", nil, 2, "", "Usage: toolctl"},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"help", []string{"help"}, 0, "call NAME [JSON|@file|-]", ""},
		{"call without a name", []string{"call"}, 2, "", "call takes a tool name"},
		{"call with three arguments", []string{"call", "echo", "{}", "{}"}, 2, "", "call takes a tool name"},
		{"invalid tool name", []string{"call", "a.b"}, 2, "", `invalid tool name "a.b"`},
		{"tool name too long", []string{"call", strings.Repeat("n", 300)}, 2, "", "at most 255 bytes"},
		{"bad JSON", []string{"call", "echo", `{"text":`}, 2, "", "the input is not valid JSON"},
		{"JSON the shell unquoted", []string{"call", "echo", `{text:hi}`}, 2, "", "put the JSON in single quotes"},
		{"not an object", []string{"call", "echo", `["hi"]`}, 2, "", "must be a JSON object of arguments"},
		{"two values", []string{"call", "echo", `{} {}`}, 2, "", "more than one JSON value"},
		{"empty input", []string{"call", "echo", ``}, 2, "", "the input is empty"},
		{"missing input file", []string{"call", "echo", "@" + filepath.Join(dir, "none.json")}, 2, "", "reading the input"},
		{"negative timeout", []string{"call", "echo", "--timeout", "-1s"}, 2, "", "--timeout must not be negative"},
		{"unknown flag", []string{"call", "echo", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{"input from a file", []string{"call", "echo", "@" + input}, 0, "from a file\n", ""},
		{"flags after the input", []string{"call", "echo", `{"text":"x"}`, "--session", "s", "-v"}, 0, "x\n", `"worker":"solo"`},
		{"unknown tool", []string{"call", "nope", "{}"}, 1, "ToolNotFoundError", "code not_found"},
		{"misspelt tool", []string{"call", "ecoh", `{"text":"x"}`}, 1, "ToolNotFoundError", "did you mean echo?"},
		{"invalid input", []string{"call", "echo", `{"text":5}`}, 1, "Input validation failed", "code invalid_input"},
		{"invalid input names the parameters", []string{"call", "echo", `{"txt":"x"}`}, 1, "Input validation failed",
			"toolctl: echo takes a JSON object of: text (string, required); toolctl tools --json shows its whole input schema"},
		{"timeout", []string{"call", "sleep", `{"seconds":30}`, "--timeout", "300ms"}, 1, "", "code timeout"},
		{"groups set without a session", []string{"groups", "set", "exec"}, 2, "", "groups set needs --session"},
		{"groups set on a fleet without groups", []string{"groups", "set", "--session", "s", "exec"}, 1, "", `no group "exec": the fleet has no tool groups besides basic`},
		{"groups set of none on a fleet without groups", []string{"groups", "set", "--session", "s"}, 0, "", "no tool groups besides basic"},
		{"state import on a fleet without groups", []string{"state", "import", "--session", "s", state}, 1, "", `no group "exec": the fleet has no tool groups besides basic`},
		{"groups without groups", []string{"groups"}, 0, "", "no tool groups besides basic"},
		{"groups with an argument", []string{"groups", "exec"}, 2, "", `unexpected argument "exec"`},
		{"tools with an argument", []string{"tools", "echo"}, 2, "", "tools takes no arguments"},
		{"cancel without an id", []string{"cancel"}, 2, "", "cancel takes one call id"},
		{"cancel a bad id", []string{"cancel", "a b"}, 2, "", "invalid call id"},
		{"cancel an unknown call", []string{"cancel", "c1"}, 0, "", "cancel sent for call c1"},
		{"bad --nats", []string{"--nats", "http://x", "tools"}, 2, "", `flag --nats: nats.urls[0]: invalid URL "http://x"`},
		{"bad --nats after the command", []string{"tools", "--nats", "http://x"}, 2, "", `flag --nats: nats.urls[0]: invalid URL "http://x"`},
		{"no server", []string{"--nats", "nats://127.0.0.1:1", "tools"}, 5, "", "cannot connect to NATS at nats://127.0.0.1:1"},
		// The URL is named without its password (nor a token given as its user).
		{"no server, password hidden", []string{"--nats", "nats://alice:pw-s3cret@127.0.0.1:1,nats://tok-s3cret@127.0.0.1:2", "tools"}, 5, "",
			"cannot connect to NATS at nats://alice:***@127.0.0.1:1,nats://***@127.0.0.1:2: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := toolctl(t, w.url, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					code, out, errOut, tt.code, tt.stdout, tt.stderr)
			}
		})
	}

	t.Run("cancel a running call", func(t *testing.T) {
		p := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "--id", "long-1", "sleep", `{"seconds":50}`)
		if _, ok := p.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
			t.Fatalf("no progress:\n%s", p.stderr)
		}
		if _, errOut, code := toolctl(t, w.url, "cancel", "long-1"); code != 0 {
			t.Fatalf("cancel: exit %d, stderr %q", code, errOut)
		}
		if code := p.exit(t); code != 4 || !strings.Contains(p.stderr.String(), "call long-1 ended interrupted") {
			t.Errorf("exit %d\n%s", code, p.stderr)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		p := startProcStdin(t, `{"text":"from stdin"}`, "--nats", w.url, "call", "echo", "-")
		if code := p.exit(t); code != 0 || p.stdout.String() != "from stdin" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, p.stdout, p.stderr)
		}
	})

	t.Run("json", func(t *testing.T) {
		out, errOut, code := toolctl(t, w.url, "call", "--json", "sleep", `{"seconds":1.2}`)
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last struct{ Final *toolkit.Response }
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Final == nil {
			t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
		}
		if last.Final.State != toolkit.StateSuccess || last.Final.Metadata["worker"] != "solo" {
			t.Errorf("final %+v", last.Final)
		}
		if !strings.Contains(out, `{"progress":{"progress":1`) {
			t.Errorf("no progress event:\n%s", out)
		}
	})

	t.Run("tools json", func(t *testing.T) {
		out, errOut, code := toolctl(t, w.url, "tools", "--json")
		var tools []struct {
			Name       string         `json:"name"`
			Group      string         `json:"group"`
			ReadOnly   bool           `json:"read_only"`
			Instances  []string       `json:"instances"`
			Parameters map[string]any `json:"parameters"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &tools) != nil {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if len(tools) != 5 || tools[0].Name != "echo" || !tools[0].ReadOnly || tools[0].Instances[0] != "solo" || tools[0].Parameters["type"] != "object" {
			t.Errorf("tools: %+v", tools)
		}
	})

	t.Run("connection from a worker config", func(t *testing.T) {
		_, port, err := net.SplitHostPort(strings.TrimPrefix(w.url, "nats://"))
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "worker.yaml")
		mustWrite(t, cfg, "embedded:\n  listen: 0.0.0.0:"+port+"\n")
		p := startProc(t, cleanEnv(t), toolctlBin, "--config", cfg, "call", "echo", `{"text":"via config"}`)
		if code := p.exit(t); code != 0 || p.stdout.String() != "via config" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, p.stdout, p.stderr)
		}
	})

	t.Run("NATS_URL", func(t *testing.T) {
		p := startProc(t, cleanEnv(t, "NATS_URL="+w.url), toolctlBin, "call", "echo", `{"text":"via env"}`)
		if code := p.exit(t); code != 0 || p.stdout.String() != "via env" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, p.stdout, p.stderr)
		}
	})
}

// startProcStdin starts toolctl with stdin.
func startProcStdin(t *testing.T, stdin string, args ...string) *proc {
	t.Helper()
	f := filepath.Join(t.TempDir(), "stdin")
	mustWrite(t, f, stdin)
	in, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return startProcWith(t, cleanEnv(t), in, toolctlBin, args...)
}

// TestToolctlNoWorkers: a reachable NATS server without workers.
func TestToolctlNoWorkers(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(guard) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"tools", "--wait", "100ms"}, 1, "", "no worker answered on " + s.ClientURL() + " within 100ms " +
			"(start a worker joined to that server, worker --nats URL; on a busy fleet, give a longer --wait)"},
		{[]string{"groups"}, 1, "", "no worker answered"},
		{[]string{"call", "echo", "{}"}, 1, "", "code unavailable)\ntoolctl: no worker answers on " + s.ClientURL() + " (start a worker joined to that server: worker --nats URL)"},
		{[]string{"groups", "set", "--session", "s", "exec"}, 1, "", "code unavailable"},
		{[]string{"cancel", "c1"}, 0, "", "cancel sent"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := toolctl(t, s.ClientURL(), tt.args...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", code, out, errOut, tt.code, tt.stderr)
			}
		})
	}
}

// TestToolctlRefused: what the server refuses to the credentials toolctl
// connects with (a caller's key without its identity, or with another's;
// an operator's command with a caller's key) ends at once with exit 2 and
// says how to go on, instead of waiting for a worker that never hears the
// call.
func TestToolctlRefused(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	alice := filepath.Join(f.auth, "caller-alice.nk")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"call without --identity", []string{"--nkey", alice, "call", "echo", `{"text":"hi"}`}, 2, "--identity alice"},
		{"call as another identity", []string{"--nkey", alice, "--identity", "bob", "call", "echo", `{"text":"hi"}`}, 2, "--identity alice"},
		{"groups set without --identity", []string{"--nkey", alice, "groups", "set", "--session", "s", "vault"}, 2, "--identity alice"},
		{"an operator's command", []string{"--nkey", alice, "--identity", "alice", "mode", "--session", "s", "explore"}, 2, "the operator's key"},
		{"cancel as another identity", []string{"--nkey", alice, "--identity", "bob", "cancel", "c1"}, 2, "--identity alice"},
		{"cancel without --identity", []string{"--nkey", alice, "cancel", "c1"}, 2, "--identity alice"},
		// A listing waits long enough for an announcement, which needs no
		// inbox: the refused inbox decides, not whether one came in time.
		{"tools as another identity", []string{"--nkey", alice, "--identity", "bob", "tools", "--wait", "3s"}, 2, "--identity alice"},
		{"tools without --identity", []string{"--nkey", alice, "tools", "--wait", "3s"}, 2, "--identity alice"},
		{"cancel as the key's identity", []string{"--nkey", alice, "--identity", "alice", "cancel", "c1"}, 0, "cancel sent"},
		{"call as the key's identity", []string{"--nkey", alice, "--identity", "alice", "call", "echo", `{"text":"hi"}`}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := toolctl(t, f.url, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", code, out, errOut, tt.code, tt.stderr)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

// TestToolctlGatewayKeyHint: the MCP gateway started with a caller's key
// (and that caller's identity) is refused, and the hint names the
// gateway's key, not the --identity it already has.
func TestToolctlGatewayKeyHint(t *testing.T) {
	f := startSecureFleet(t, secureConfig)
	alice := filepath.Join(f.auth, "caller-alice.nk")
	out, errOut, code := toolctl(t, f.url, "--nkey", alice, "--identity", "alice", "mcp", "stdio")
	if code != 2 || !strings.Contains(errOut, "the gateway's key") || strings.Contains(errOut, "--identity alice") {
		t.Fatalf("mcp stdio with a caller's key: exit %d, stdout %q, stderr %q; want exit 2 naming the gateway's key", code, out, errOut)
	}
}

// TestToolctlCallerSessionTools: a caller lists what its session may run
// with its own key: the listing reads the session's mode and rules (which
// the caller role may), not the approvals bucket (which it may not).
func TestToolctlCallerSessionTools(t *testing.T) {
	f := startSecureFleet(t, secureConfig+"permissions:\n  mode: default\n")
	alice := filepath.Join(f.auth, "caller-alice.nk")
	out, errOut, code := toolctl(t, f.url, "--nkey", alice, "--identity", "alice", "tools", "--session", "s")
	if code != 0 || !strings.Contains(out, "echo") || errOut != "" {
		t.Fatalf("tools --session as the key's identity: exit %d, stdout %q, stderr %q; want exit 0 and the tools", code, out, errOut)
	}
}
