package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// A Streamable HTTP server answering a call with an error status and a
// body that is not JSON (a page of text/html, or an event stream) fails
// that call once the body passes MaxMessageBytes: the go-sdk reads an
// error answer's body whole to look for a JSON-RPC error in it, and the
// bound was only on answers sent as application/json, so an endless
// error page was read into memory until the call's deadline.
func TestErrorAnswerBodyBounded(t *testing.T) {
	for media, line := range map[string]string{
		"text/html":         "<p>x</p>\n",
		"text/event-stream": ": x\n\n", // events of a comment line each
	} {
		t.Run(strings.ReplaceAll(media, "/", "-"), func(t *testing.T) {
			const total = 128 << 20
			var written atomic.Int64
			u := callAnswerServer(t, func(w http.ResponseWriter, _ json.RawMessage, _ string) {
				w.Header().Set("Content-Type", media)
				w.WriteHeader(http.StatusBadRequest)
				piece := []byte(strings.Repeat(line, (64<<10)/len(line)))
				for written.Load() < total {
					if _, err := w.Write(piece); err != nil {
						return
					}
					written.Add(int64(len(piece)))
				}
			})
			tk, _ := mount(t, ServerConfig{Name: "errpage", Transport: TransportStreamableHTTP, URL: u})
			r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "e", Name: "mcp__errpage__echo", Input: map[string]any{"text": "x"}}, toolkit.WriterFuncs{})
			t.Logf("final %s/%s %.200q; the server wrote %d MiB", r.State, r.Code, r.Text(), written.Load()>>20)
			if r.State != toolkit.StateError || !strings.Contains(r.Text(), "Bad Request") {
				t.Errorf("a call answered 400 with an endless %s body ended %s/%s %.200q, want an error naming the status", media, r.State, r.Code, r.Text())
			}
			if written.Load() >= total {
				t.Errorf("the whole %d MiB %s error body was read", total>>20, media)
			}
		})
	}
}

// A tool whose input schema's references come back to the same value
// without descending into it is skipped: the toolkit's validator follows
// them for ever, and the first call of such a tool overflowed the stack,
// a fatal error that ended the worker. So is one whose references apply
// a subschema to one value an exponential number of times (a chain of
// anyOf of two references to the next link), which held a core for longer
// than any deadline. A recursive schema that descends (a tree) is kept.
func TestSchemaReferenceCyclesSkipped(t *testing.T) {
	chain := map[string]any{"last": map[string]any{"type": "string"}}
	for i := range 40 {
		next := "last"
		if i < 39 {
			next = fmt.Sprintf("d%d", i+1)
		}
		ref := map[string]any{"$ref": "#/$defs/" + next}
		chain[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{ref, ref}}
	}
	schemas := map[string]any{
		"root":    map[string]any{"type": "object", "$ref": "#"},
		"anyof":   map[string]any{"type": "object", "anyOf": []any{map[string]any{"$ref": "#"}}},
		"pointer": map[string]any{"type": "object", "allOf": []any{map[string]any{"$ref": "#/allOf/0"}}},
		"defs": map[string]any{"type": "object", "$defs": map[string]any{
			"a": map[string]any{"$ref": "#/$defs/b"}, "b": map[string]any{"not": map[string]any{"$ref": "#/$defs/a"}}},
			"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/a"}}},
		"anchor": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{
			"$anchor": "here", "if": map[string]any{"$ref": "#here"}}}},
		"dynamic": map[string]any{"type": "object", "$dynamicAnchor": "meta", "anyOf": []any{map[string]any{"$dynamicRef": "#meta"}}},
		"chain":   map[string]any{"type": "object", "$defs": chain, "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d0"}}},
		"tree": map[string]any{"type": "object", "$defs": map[string]any{"node": map[string]any{"type": "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"},
				"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/node"}}}}},
			"properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/node"}}},
	}
	srv := newTestServer(nil)
	for name, s := range schemas {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: s}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("ran"), nil
		})
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	tk, _ := mount(t, ServerConfig{Name: "refs", Transport: TransportStreamableHTTP, URL: hs.URL})
	for name := range schemas {
		_, ok := tk.Get("mcp__refs__" + name)
		if want := name == "tree"; ok != want {
			t.Errorf("tool %s registered %v, want %v", name, ok, want)
		}
	}
	in := map[string]any{"root": map[string]any{"name": "a", "children": []any{map[string]any{"name": "b", "children": []any{}}}}}
	if r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "t", Name: "mcp__refs__tree", Input: in}, toolkit.WriterFuncs{}); r.Text() != "ran" {
		t.Errorf("the tree tool ended %s/%s %.200q, want ran", r.State, r.Code, r.Text())
	}
	bad := map[string]any{"root": map[string]any{"children": []any{map[string]any{"name": 1}}}}
	if r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "t", Name: "mcp__refs__tree", Input: bad}, toolkit.WriterFuncs{}); r.Code != toolkit.CodeInvalidInput {
		t.Errorf("the tree tool given a number for a name ended %s/%s %.200q, want invalid_input", r.State, r.Code, r.Text())
	}
}

// garbageServerMain is a stdio server (the re-executed test binary) with
// one tool, "t", whose call it answers with a line that is not JSON-RPC,
// as a server printing its logs to stdout does.
func garbageServerMain() int {
	dec := json.NewDecoder(os.Stdin)
	for {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if dec.Decode(&m) != nil {
			return 0
		}
		var result string
		switch m.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"g","version":"1"}}`, m.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
		case "tools/call":
			fmt.Println("starting the call of t")
			continue
		default:
			if m.ID == nil {
				continue
			}
			result = `{}`
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
	}
}

// A stdio server that writes a line other than JSON-RPC to its stdout
// breaks its connection: the call ends saying so (the server's stdout is
// for JSON-RPC, its logs go to stderr), not that the server "answered,
// but its result cannot be read", which took the broken stream for an
// answer and so did not send a read-only tool's call again on a new
// session.
func TestStdoutGarbageEndsConnection(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := mount(t, ServerConfig{Name: "g", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "stdout-garbage"}})
	r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "g", Name: "mcp__g__t", Input: map[string]any{}}, toolkit.WriterFuncs{})
	t.Logf("final %s/%s %.300q", r.State, r.Code, r.Text())
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "other than JSON-RPC to its stdout") || strings.Contains(r.Text(), "result cannot be read") {
		t.Errorf("a server writing a log line to stdout: final %s/%s %.300q, want tool_error saying it wrote something other than JSON-RPC to its stdout", r.State, r.Code, r.Text())
	}
}

// enable_tools naming a tool the server lacks is an error listing the
// tools it has: all of them, unquoted, so a server of very many tools
// (or of names holding line breaks) made the worker's start-up error
// megabytes long, or many lines. The list is cut, and each name quoted.
func TestUnknownEnableToolListBounded(t *testing.T) {
	srv := newTestServer(nil)
	answerLists(srv, func(int64) *sdk.ListToolsResult {
		r := &sdk.ListToolsResult{}
		for i := range 9_000 {
			r.Tools = append(r.Tools, &sdk.Tool{Name: fmt.Sprintf("tool_%05d_%s", i, strings.Repeat("n", 100)), InputSchema: map[string]any{"type": "object"}})
		}
		r.Tools = append(r.Tools, &sdk.Tool{Name: "line\nbreak", InputSchema: map[string]any{"type": "object"}})
		return r
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	c := newTestClient(t, ServerConfig{Name: "many", Transport: TransportStreamableHTTP, URL: hs.URL, EnableTools: []string{"absent"}})
	err := c.Register(testCtx(t), toolkit.New(nil))
	if !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("mount: %v, want ErrUnknownTool", err)
	}
	msg := err.Error()
	if len(msg) > 4096 || strings.Contains(msg, "\n") || !strings.Contains(msg, `"absent"`) || !strings.Contains(msg, "9001 tools") {
		t.Errorf("error of %d bytes: %.600q", len(msg), msg)
	}
}
