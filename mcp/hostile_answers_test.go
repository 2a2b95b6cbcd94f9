package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "hostile-answers" {
		os.Exit(hostileAnswersServerMain())
	}
}

// oddToolNames are names a server may list that are no subject token:
// they hold the tokens' separator, NATS wildcards, spaces and control
// characters, or are empty.
var oddToolNames = []string{"", "a.b", "*", ">", "a b", "a\x01b", "c\td", "é.>"}

// hostileAnswersServerMain is a stdio server, JSON-RPC written by hand:
// "twice" is answered twice, and a response to an id never asked
// follows; "silent" is never answered; "cancelled" answers with the ids
// of the requests the client has cancelled (notifications/cancelled);
// any other tool, those of oddToolNames among them, answers with the
// name it was called by.
func hostileAnswersServerMain() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, text string) {
		b, _ := json.Marshal(text)
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`+"\n", id, b)
	}
	var cancelled []json.RawMessage
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string          `json:"protocolVersion"`
				Name            string          `json:"name"`
				RequestID       json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "notifications/cancelled":
			cancelled = append(cancelled, m.Params.RequestID)
		case m.ID == nil:
		case m.Method == "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}}`+"\n", m.ID, m.Params.ProtocolVersion)
		case m.Method == "tools/list":
			var tools []string
			for _, n := range append([]string{"echo", "twice", "silent", "cancelled"}, oddToolNames...) {
				b, _ := json.Marshal(n)
				tools = append(tools, `{"name":`+string(b)+`,"inputSchema":{"type":"object"}}`)
			}
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s]}}`+"\n", m.ID, strings.Join(tools, ","))
		case m.Method != "tools/call":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", m.ID)
		case m.Params.Name == "twice":
			answer(m.ID, "first")
			answer(m.ID, "second")
			answer(json.RawMessage("987654321"), "never asked")
		case m.Params.Name == "silent":
		case m.Params.Name == "cancelled":
			b, _ := json.Marshal(cancelled)
			answer(m.ID, string(b))
		default:
			answer(m.ID, m.Params.Name)
		}
		out.Flush()
	}
	return 0
}

// A stdio server that answers a call twice, and a request never asked,
// has the call take the first answer; the others are dropped and the
// session goes on. A call the server never answers ends with the
// configured timeout, the server is sent notifications/cancelled for it,
// and the session goes on.
func TestStdioServerStrayAnswers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tk, c := mount(t, ServerConfig{Name: "h", Transport: TransportStdio, Command: exe, Timeout: Duration(500 * time.Millisecond),
		Env: map[string]string{mountTestServerEnv: "hostile-answers"}})
	ctx := testCtx(t)
	before := c.current()
	call := func(tool string) *toolkit.Response {
		return tk.Dispatch(ctx, toolkit.ToolCall{ID: tool, Name: ToolName("h", tool), Input: map[string]any{}}, toolkit.WriterFuncs{})
	}
	if r := call("twice"); r.State != toolkit.StateSuccess || r.Text() != "first" {
		t.Errorf("a call answered twice: %s/%s %q, want the first answer", r.State, r.Code, r.Text())
	}
	if r := call("echo"); r.Text() != "echo" {
		t.Errorf("the call after the stray answers: %s/%s %q", r.State, r.Code, r.Text())
	}
	if r := call("silent"); r.Code != toolkit.CodeTimeout || !strings.Contains(r.Text(), "did not finish") {
		t.Errorf("a call never answered: %s/%s %q, want timeout", r.State, r.Code, r.Text())
	}
	// The cancel may follow the call's end on the wire.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var ids []json.RawMessage
		r := call("cancelled")
		if json.Unmarshal([]byte(r.Text()), &ids) == nil && len(ids) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server read cancels for %s/%s %q, want the one of the call never answered", r.State, r.Code, r.Text())
		}
	}
	if c.current() != before {
		t.Error("the session was replaced")
	}
}

// A server's tool names that are no subject token (a '.', NATS
// wildcards, spaces, control characters, or none) are registered under
// names that are, and a call reaches the server under the name it
// listed; those that become one name have the first listed served.
func TestStdioServerOddToolNames(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tk, c := mount(t, ServerConfig{Name: "h", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "hostile-answers"}})
	for _, name := range c.Tools() {
		if !toolkit.ValidToolName(name) {
			t.Errorf("registered %q, not a valid tool name", name)
		}
	}
	ctx := testCtx(t)
	var served []string
	for _, own := range oddToolNames {
		name := ToolName("h", own)
		if slices.Contains(served, name) {
			continue // the first listed under that name is served
		}
		served = append(served, name)
		r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "c", Name: name, Input: map[string]any{}}, toolkit.WriterFuncs{})
		if r.State != toolkit.StateSuccess || r.Text() != own {
			t.Errorf("%s: %s/%s %q, want the server called by %q", name, r.State, r.Code, r.Text(), own)
		}
	}
	if got, want := len(c.Tools()), 4+len(served); got != want {
		t.Errorf("registered %v, want %d tools", c.Tools(), want)
	}
}
