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

// resultlessAnswer is the answer of a server, JSON-RPC written by hand,
// whose tool "bare" is answered with a response holding neither a result
// nor an error; its tool "id" answers with id (which names the server's
// process, or counts its sessions). It returns "" for a notification;
// initialize reports itself with initialized.
func resultlessAnswer(line []byte, id string, initialized func()) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name            string `json:"name"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID == nil {
		return ""
	}
	rid := string(m.ID)
	switch {
	case m.Method == "initialize":
		initialized()
		return `{"jsonrpc":"2.0","id":` + rid + `,"result":{"protocolVersion":"` + m.Params.ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"resultless","version":"1"}}}`
	case m.Method == "tools/list":
		return `{"jsonrpc":"2.0","id":` + rid + `,"result":{"tools":[` +
			`{"name":"bare","description":"Answers without a result.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},` +
			`{"name":"id","description":"The server's process or session.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}}`
	case m.Method == "tools/call" && m.Params.Name == "bare":
		return `{"jsonrpc":"2.0","id":` + rid + `}`
	case m.Method == "tools/call":
		return `{"jsonrpc":"2.0","id":` + rid + `,"result":{"content":[{"type":"text","text":"` + id + `"}]}}`
	}
	return `{"jsonrpc":"2.0","id":` + rid + `,"result":{}}`
}

// resultlessServerMain serves resultlessAnswer on stdio; "id" is the
// process id.
func resultlessServerMain() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		if a := resultlessAnswer(in.Bytes(), fmt.Sprint(os.Getpid()), func() {}); a != "" {
			fmt.Println(a)
		}
	}
	return 0
}

// resultlessHTTP serves resultlessAnswer over Streamable HTTP (JSON
// answers) or, with sse, over the legacy SSE transport; "id" is the number
// of sessions opened.
func resultlessHTTP(t *testing.T, sse bool) string {
	var sessions atomic.Int32
	id := func() string { return fmt.Sprint(sessions.Load()) }
	opened := func() { sessions.Add(1) }
	stream := make(chan string, 16)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case sse && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: endpoint\ndata: /message\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case a := <-stream:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", a)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case r.Method == http.MethodDelete:
			return
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var body json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		init := func() {
			opened()
			if !sse {
				w.Header().Set("Mcp-Session-Id", "s"+id())
			}
		}
		a := resultlessAnswer(body, id(), init)
		switch {
		case a == "":
			w.WriteHeader(http.StatusAccepted)
		case sse:
			w.WriteHeader(http.StatusAccepted)
			stream <- a
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, a)
		}
	}))
	t.Cleanup(hs.Close)
	if sse {
		return hs.URL + "/sse"
	}
	return hs.URL
}

// A response holding neither a result nor an error (JSON-RPC requires
// one) is the server's faulty answer, not a broken connection: the go-sdk
// decodes its missing result as io.EOF, which was taken for the
// connection's end. The call ended "the connection ... failed: EOF", the
// server's session (a stdio server alive and well: its process) was
// replaced, with every other call on it, and a read-only tool's call was
// sent again. It now ends tool_error saying the server answered without a
// result, once, on a session that stays.
func TestResultlessAnswerKeepsSession(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for transport, cfg := range map[string]ServerConfig{
		"stdio":           {Name: "r", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "resultless"}},
		"streamable-http": {Name: "r", Transport: TransportStreamableHTTP, URL: resultlessHTTP(t, false)},
		"sse":             {Name: "r", Transport: TransportSSE, URL: resultlessHTTP(t, true)},
	} {
		t.Run(transport, func(t *testing.T) { testResultless(t, cfg) })
	}
}

func testResultless(t *testing.T, cfg ServerConfig) {
	tk, _ := mount(t, cfg)
	ctx := testCtx(t)
	id := func() string {
		t.Helper()
		r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "id", Name: "mcp__r__id", Input: map[string]any{}}, toolkit.WriterFuncs{})
		if r.State != toolkit.StateSuccess {
			t.Fatalf("id: %s/%s %q", r.State, r.Code, r.Text())
		}
		return r.Text()
	}
	before := id()
	r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "bare", Name: "mcp__r__bare", Input: map[string]any{}}, toolkit.WriterFuncs{})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "without a result") || strings.Contains(r.Text(), "EOF") {
		t.Errorf("a response without a result: %s/%s %q, want tool_error saying the server answered without a result", r.State, r.Code, r.Text())
	}
	if after := id(); after != before {
		t.Errorf("the server answered without a result and its session was replaced: %s, then %s", before, after)
	}
}
