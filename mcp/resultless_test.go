package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "resultless" {
		os.Exit(resultlessServerMain())
	}
}

// resultlessServerMain is a stdio server, JSON-RPC written by hand, whose
// tool "bare" is answered with a response holding neither a result nor
// an error; its tool "pid" answers with the server's process id.
func resultlessServerMain() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	send := func(s string) { fmt.Fprintln(os.Stdout, s) }
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		id := string(m.ID)
		switch {
		case m.Method == "initialize":
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"` + m.Params.ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"resultless","version":"1"}}}`)
		case m.Method == "tools/list":
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[` +
				`{"name":"bare","description":"Answers without a result.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},` +
				`{"name":"pid","description":"The server's process id.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}}`)
		case m.Method == "tools/call" && m.Params.Name == "bare":
			send(`{"jsonrpc":"2.0","id":` + id + `}`)
		case m.Method == "tools/call":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%d"}]}}`, id, os.Getpid()))
		default:
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
		}
	}
	return 0
}

// A response holding neither a result nor an error (JSON-RPC requires
// one) is the server's faulty answer, not a broken connection: the go-sdk
// decodes its missing result as io.EOF, which was taken for the stdio
// connection's end. The call ended "the connection ... failed: EOF", the
// server (alive and well) was killed and started again, with every other
// call on it, and a read-only tool's call was sent again. It now ends
// tool_error saying the server answered without a result, once, on a
// session that stays.
func TestResultlessAnswerKeepsSession(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for transport, cfg := range map[string]ServerConfig{
		"stdio":           {Name: "r", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "resultless"}},
		"streamable-http": {Name: "r", Transport: TransportStreamableHTTP, URL: resultlessHTTP(t)},
	} {
		t.Run(transport, func(t *testing.T) { testResultless(t, cfg) })
	}
}

func testResultless(t *testing.T, cfg ServerConfig) {
	tk, _ := mount(t, cfg)
	ctx := testCtx(t)
	pid := func() string {
		t.Helper()
		r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "pid", Name: "mcp__r__pid", Input: map[string]any{}}, toolkit.WriterFuncs{})
		if r.State != toolkit.StateSuccess {
			t.Fatalf("pid: %s/%s %q", r.State, r.Code, r.Text())
		}
		return r.Text()
	}
	before := pid()
	r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "bare", Name: "mcp__r__bare", Input: map[string]any{}}, toolkit.WriterFuncs{})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "without a result") || strings.Contains(r.Text(), "EOF") {
		t.Errorf("a response without a result: %s/%s %q, want tool_error saying the server answered without a result", r.State, r.Code, r.Text())
	}
	if after := pid(); after != before {
		t.Errorf("the server answered without a result and its session was replaced: %s, then %s", before, after)
	}
}

// resultlessHTTP is a Streamable HTTP server, written by hand, with the
// tools of resultlessServerMain; "pid" answers with how many sessions
// it has opened.
func resultlessHTTP(t *testing.T) string {
	var sessions atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			if r.Method == http.MethodDelete {
				return
			}
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		id := string(m.ID)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", fmt.Sprint("s", sessions.Add(1)))
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"`+m.Params.ProtocolVersion+`","capabilities":{"tools":{}},"serverInfo":{"name":"resultless","version":"1"}}}`)
		case m.Method == "tools/list":
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"tools":[`+
				`{"name":"bare","description":"Answers without a result.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},`+
				`{"name":"pid","description":"Sessions opened.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}}`)
		case m.Method == "tools/call" && m.Params.Name == "bare":
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":`+id+`}`)
		case m.Method == "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%d"}]}}`, id, sessions.Load())
		default:
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}
