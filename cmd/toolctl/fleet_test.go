package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// groupsFleet starts an embedded server on a loopback port and one worker
// whose toolkit has the group "web" (tool "search") and its group state in
// the fleet's KV bucket; it returns the server's URL.
func groupsFleet(t *testing.T) string {
	t.Helper()
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	ctx := natstest.Ctx(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	state, err := bus.NewKVState(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web access."}); err != nil {
		t.Fatal(err)
	}
	search := toolkit.Func("search", "Search.", func(ctx context.Context, in struct{}) (string, error) { return "found", nil })
	if err := tk.Add(search, toolkit.InGroup("web")); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return s.ClientURL()
}

func toolctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = run(natstest.Ctx(t), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// A caller with --identity activates a group for its session with
// `groups set`; `groups --session`, `tools --session` and `instructions`
// of the same identity must show that session, not the anonymous one of
// the same name.
func TestFleetCommandsHonourIdentity(t *testing.T) {
	url := groupsFleet(t)
	// Control: without --identity the same steps agree.
	if code, _, errs := toolctl(t, "--nats", url, "groups", "set", "--session", "s0", "web"); code != exitOK {
		t.Fatalf("groups set: exit %d: %s", code, errs)
	}
	if code, out, _ := toolctl(t, "--nats", url, "tools", "--session", "s0"); code != exitOK || !strings.Contains(out, "search") {
		t.Fatalf("control (no identity): tools --session s0: exit %d\n%s", code, out)
	}
	if code, _, errs := toolctl(t, "--nats", url, "--identity", "alice", "groups", "set", "--session", "s1", "web"); code != exitOK {
		t.Fatalf("groups set: exit %d: %s", code, errs)
	}
	code, out, errs := toolctl(t, "--nats", url, "--identity", "alice", "groups", "--session", "s1", "--json")
	if code != exitOK {
		t.Fatalf("groups: exit %d: %s", code, errs)
	}
	var groups []groupJSON
	if err := json.Unmarshal([]byte(out), &groups); err != nil {
		t.Fatal(err, out)
	}
	if len(groups) != 1 || groups[0].Active == nil || !*groups[0].Active {
		t.Errorf("alice's session s1 after `groups set --session s1 web`: toolctl groups --session s1 says %s", out)
	}
	code, out, errs = toolctl(t, "--nats", url, "--identity", "alice", "tools", "--session", "s1")
	if code != exitOK {
		t.Fatalf("tools: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "search") {
		t.Errorf("alice's session s1 has web active, but toolctl tools --session s1 lists:\n%s", out)
	}
}

// `toolctl auth init` without --caller writes a gateway-tokens file that
// holds only its comment line; the command it prints then, `mcp serve
// --listen 0.0.0.0:8808 --tokens gateway-tokens`, must not serve MCP
// beyond loopback to anyone: with no token to admit, --tokens must either
// be refused or admit nobody. It serves everyone, unauthenticated.
func TestMCPServeTokensFileWithoutTokens(t *testing.T) {
	url := groupsFleet(t)
	dir := t.TempDir()
	if code, _, errs := toolctl(t, "auth", "init", "--dir", dir); code != exitOK {
		t.Fatalf("auth init: exit %d: %s", code, errs)
	}
	tokens := filepath.Join(dir, "gateway-tokens")
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	var stderr natstest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--nats", url, "mcp", "serve", "--listen", "0.0.0.0:0", "--tokens", tokens}, strings.NewReader(""), io.Discard, &stderr)
	}()
	defer func() { cancel(); <-done }()
	var endpoint string
	natstest.WaitFor(t, "the gateway to listen or exit", func() bool {
		select {
		case code := <-done:
			done <- code
			return true
		default:
		}
		if _, rest, ok := strings.Cut(stderr.String(), "url=http://"); ok {
			hostPort, _, _ := strings.Cut(rest, "/")
			_, port, _ := net.SplitHostPort(hostPort)
			endpoint = "http://127.0.0.1:" + port + "/mcp"
			return true
		}
		return false
	})
	if endpoint == "" {
		return // refused: fine
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Fatalf("mcp serve --listen 0.0.0.0:0 --tokens <file without tokens> serves MCP to a client without a token: initialize got %s (session %q); want the command refused (exit %d) or 401",
		resp.Status, resp.Header.Get("Mcp-Session-Id"), exitUsage)
}

// A bad --id is bad input on the command line: like a bad tool name it
// should exit 2 ("bad usage or input: nothing was sent", --help), as
// `toolctl cancel a.b` does; call and result exit 1 with a call "ended
// error (code invalid_input)" that never was, and approve with "no call
// is waiting" after looking it up.
func TestBadCallIDIsUsage(t *testing.T) {
	url := groupsFleet(t)
	if code, _, errs := toolctl(t, "--nats", url, "cancel", "a.b"); code != exitUsage {
		t.Fatalf("control: cancel a.b: exit %d: %s", code, errs)
	}
	for _, args := range [][]string{
		{"call", "--id", "a.b", "search"},
		{"call", "--id", strings.Repeat("x", 129), "search"},
		{"result", "a.b"},
		{"approve", "a.b"},
		{"approve", strings.Repeat("x", 5000)},
	} {
		code, _, errs := toolctl(t, append([]string{"--nats", url}, args...)...)
		if code != exitUsage {
			t.Errorf("toolctl %s: exit %d, want %d; stderr: %s", strings.Join(args, " ")[:min(40, len(strings.Join(args, " ")))], code, exitUsage, errs)
		}
	}
}

// The same header twice (HTTP names ignore case) is bad input: one of the
// values would win silently.
func TestMCPHeadersTwiceIsUsage(t *testing.T) {
	for _, args := range [][]string{{"A=1", "A=2"}, {"X-Key=1", "x-key=2"}} {
		code, _, errs := toolctl(t, append([]string{"--nats", "nats://127.0.0.1:1", "mcp-headers", "tracker"}, args...)...)
		if code != exitUsage || !strings.Contains(errs, "twice") {
			t.Errorf("mcp-headers tracker %v: exit %d, stderr %q; want exit %d naming the header given twice", args, code, errs, exitUsage)
		}
	}
}

// A fleet whose workers declare no group besides basic has nothing to
// activate: `groups set --session S exec` (the README's example, typed
// against a worker without configuration) and `state import` of a state
// naming groups must fail naming the missing groups, not exit 0 as if the
// session now had them. Setting none stays a success.
func TestGroupsSetWithoutGroups(t *testing.T) {
	url := echoFleet(t)

	code, _, errs := toolctl(t, "--nats", url, "groups", "set", "--session", "s1", "exec")
	if code != exitError || !strings.Contains(errs, `"exec"`) {
		t.Errorf("groups set --session s1 exec on a fleet without groups: exit %d (want %d), stderr %q (want it to name \"exec\")", code, exitError, errs)
	}
	if code, _, errs := toolctl(t, "--nats", url, "groups", "set", "--session", "s1"); code != exitOK {
		t.Errorf("groups set --session s1 (none) on a fleet without groups: exit %d: %s", code, errs)
	}
	state := filepath.Join(t.TempDir(), "s1.json")
	if err := os.WriteFile(state, []byte(`{"active_groups":["exec"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = toolctl(t, "--nats", url, "state", "import", "--session", "s2", state)
	if code != exitError || !strings.Contains(errs, `"exec"`) {
		t.Errorf("state import of active_groups [exec] on a fleet without groups: exit %d (want %d), stderr %q", code, exitError, errs)
	}
	if err := os.WriteFile(state, []byte(`{"active_groups":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := toolctl(t, "--nats", url, "state", "import", "--session", "s2", state); code != exitOK {
		t.Errorf("state import of no groups on a fleet without groups: exit %d: %s", code, errs)
	}
}

// `toolctl mcp-headers SERVER` with no header puts the configured headers
// back: its report must say so, not "replaced" as for new headers.
func TestMCPHeadersRestoreSaysSo(t *testing.T) {
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	sub, err := nc.Subscribe(wire.HeadersSubject("w1"), func(m *nats.Msg) {
		body, _ := wire.Msgpack.Marshal(&wire.HeadersReply{OK: true})
		m.Respond(body)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	url := s.ClientURL()
	code, out, errs := toolctl(t, "--nats", url, "mcp-headers", "--instance", "w1", "search", "Authorization=Bearer new")
	if code != exitOK || out != "w1: headers of search replaced\n" {
		t.Fatalf("mcp-headers search Authorization=…: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = toolctl(t, "--nats", url, "mcp-headers", "--instance", "w1", "search")
	if code != exitOK || out != "w1: headers of search back to the configured ones\n" {
		t.Errorf("mcp-headers search (none): exit %d, stdout %q, stderr %q; want it to say the configured headers are back", code, out, errs)
	}
}

// `toolctl result ID` for a call whose result is not kept (or not yet)
// says that nothing is kept: not "call ID ended error", which is not what
// happened to the call (it may be running, or have succeeded unkept). A
// call sent with --keep to a worker whose group state is in memory is
// not kept either: the line names that cause too, not only "it was not
// sent with --keep".
func TestResultNotKeptSaysSo(t *testing.T) {
	url := groupsFleet(t)
	code, _, errs := toolctl(t, "--nats", url, "result", "never-kept")
	if code != exitError || strings.Contains(errs, "ended error") || !strings.Contains(errs, "no result of call never-kept is kept") {
		t.Errorf("result never-kept: exit %d, stderr %q; want exit %d and a line saying no result is kept", code, errs, exitError)
	}
	if !strings.Contains(errs, "--group-state memory") {
		t.Errorf("result never-kept: stderr %q does not name a worker with its group state in memory, which keeps no results", errs)
	}
}

// A call of a tool no worker serves (a typo, most often) points to the
// fix: the fleet's tool of the nearest name, and toolctl tools.
func TestCallUnknownToolSuggests(t *testing.T) {
	url := groupsFleet(t)
	code, _, errs := toolctl(t, "--nats", url, "call", "serch", "{}")
	if code != exitError || !strings.Contains(errs, "did you mean search?") || !strings.Contains(errs, "toolctl tools") {
		t.Errorf("call serch: exit %d, stderr %q; want exit %d suggesting search and toolctl tools", code, errs, exitError)
	}
	code, _, errs = toolctl(t, "--nats", url, "call", "something_else_entirely", "{}")
	if code != exitError || strings.Contains(errs, "did you mean") || !strings.Contains(errs, "toolctl tools") {
		t.Errorf("call something_else_entirely: exit %d, stderr %q; want exit %d pointing to toolctl tools only", code, errs, exitError)
	}
}

// A call of a tool whose group the session has not activated ends
// group_inactive with the toolkit's message, which tells the model to
// call reset_tools: a person at toolctl needs the command that does it,
// and a call without --session cannot have groups at all (reset_tools
// and groups set both refuse the default session).
func TestCallInactiveGroupSaysHow(t *testing.T) {
	url := groupsFleet(t)
	code, _, errs := toolctl(t, "--nats", url, "call", "search", "{}")
	if code != exitError || !strings.Contains(errs, "code group_inactive") || !strings.Contains(errs, "toolctl groups set --session S web") || !strings.Contains(errs, "call --session S search") {
		t.Errorf("call search (no session): exit %d, stderr %q; want exit %d saying to activate web for a session and call with it", code, errs, exitError)
	}
	code, _, errs = toolctl(t, "--nats", url, "call", "--session", "s 1", "search", "{}")
	if code != exitError || !strings.Contains(errs, "toolctl groups set --session 's 1' web") {
		t.Errorf("call --session 's 1' search: exit %d, stderr %q; want exit %d naming toolctl groups set --session 's 1' web", code, errs, exitError)
	}
	if code, out, errs := toolctl(t, "--nats", url, "groups", "set", "--session", "s 1", "web"); code != exitOK {
		t.Fatalf("groups set --session 's 1' web: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := toolctl(t, "--nats", url, "call", "--session", "s 1", "search", "{}"); code != exitOK || out != "found\n" {
		t.Errorf("call --session 's 1' search after groups set: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// A call of reset_tools answers as AgentScope does for the input as
// written: unknown groups in the order written, 1.0 a <class 'float'>
// and 1 a <class 'int'>, where the map the input is decoded into keeps
// neither.
func TestCallResetToolsAsWritten(t *testing.T) {
	url := groupsFleet(t)
	for _, tt := range []struct{ in, want string }{
		{`{"zeta": true, "web": true, "omega": false}`, "Invalid group name(s): zeta, omega. The current available groups are: web"},
		{`{"web": 1.0}`, "Invalid arguments: the argument 'web' should be a bool value, but got <class 'float'>."},
		{`{"web": 1}`, "Invalid arguments: the argument 'web' should be a bool value, but got <class 'int'>."},
	} {
		code, out, errs := toolctl(t, "--nats", url, "call", "--session", "s", "reset_tools", tt.in)
		if code != exitError || !strings.Contains(out, tt.want) {
			t.Errorf("call reset_tools %s: exit %d, stdout %q, stderr %q; want %q", tt.in, code, out, errs, tt.want)
		}
	}
}
