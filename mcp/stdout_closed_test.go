package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "close-stdout" {
		os.Exit(closeStdoutServerMain())
	}
}

// closeStdoutServerMain is a stdio server (the re-executed test binary)
// with tools "echo", "close" and "cut", whose call it answers by closing
// its stdout and running on, reading its stdin no more: "close" between
// messages, "cut" in the middle of its answer.
func closeStdoutServerMain() int {
	dec := json.NewDecoder(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if dec.Decode(&m) != nil {
			return 0
		}
		var result string
		switch {
		case m.Method == "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"c","version":"1"}}`, m.Params.ProtocolVersion)
		case m.Method == "tools/list":
			result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"close","inputSchema":{"type":"object"}},{"name":"cut","inputSchema":{"type":"object"}}]}`
		case m.Method == "tools/call" && (m.Params.Name == "close" || m.Params.Name == "cut"):
			if m.Params.Name == "cut" {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"cu`, m.ID)
			}
			out.Flush()
			os.Stdout.Close()
			select {}
		case m.Method == "tools/call":
			result = `{"content":[{"type":"text","text":"echo"}]}`
		case m.ID == nil:
			continue
		default:
			result = `{}`
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
		out.Flush()
	}
}

// A stdio server that closed its stdout during a call and ran on ended
// the call with "calling "tools/call": EOF", which did not say what the
// server had done. The error now says that the server closed its stdout
// and had not exited; the next call starts it again. In stateless mode
// (and at times in stateful mode, on a loaded machine) the close of the
// session signalled the server before the error had waited exitNoteWait,
// and the error said nothing again. A server that closed its stdout in
// the middle of its answer (the connection ending with an unexpected EOF)
// was not said to have done anything either.
func TestStdioServerClosedStdoutSaysSo(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ModeStateful, ModeStateless} {
		t.Run(string(mode), func(t *testing.T) {
			tk, _ := mount(t, ServerConfig{Name: "c", Transport: TransportStdio, Command: exe, Mode: mode, Env: map[string]string{mountTestServerEnv: "close-stdout"}})
			ctx := testCtx(t)
			for _, tool := range []string{"close", "cut"} {
				r := tk.Dispatch(ctx, toolkit.ToolCall{ID: tool, Name: "mcp__c__" + tool, Input: map[string]any{}}, toolkit.WriterFuncs{})
				t.Logf("%s: final %s/%s %q", tool, r.State, r.Code, r.Text())
				if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "closed its stdout") {
					t.Errorf("a server that closed its stdout during the call (%s): %s/%s %q, want tool_error saying it closed its stdout", tool, r.State, r.Code, r.Text())
				}
				if r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "echo", Name: "mcp__c__echo", Input: map[string]any{}}, toolkit.WriterFuncs{}); r.Text() != "echo" {
					t.Errorf("the call after %s: %s/%s %q", tool, r.State, r.Code, r.Text())
				}
			}
		})
	}
}
