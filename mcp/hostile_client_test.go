package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// callAnswerServer is the test server over Streamable HTTP (JSON
// answers), but each tools/call is answered by answer, which writes the
// HTTP response itself; token is the call's progress token.
// writeHugeText answers call id with a JSON result of one text block of
// total bytes, counting what it wrote in written; it stops when the
// client goes.
func writeHugeText(w http.ResponseWriter, id json.RawMessage, total int64, written *atomic.Int64) {
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
	piece := bytes.Repeat([]byte("x"), 64<<10)
	for written.Load() < total {
		if _, err := w.Write(piece); err != nil {
			return
		}
		written.Add(int64(len(piece)))
	}
	fmt.Fprint(w, `"}]}}`)
}

// answerLists has srv answer every tools/list with list(n), n counting
// the listings from 1; the count is returned.
func answerLists(srv *sdk.Server, list func(n int64) *sdk.ListToolsResult) *atomic.Int64 {
	n := new(atomic.Int64)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			return list(n.Add(1)), nil
		}
	})
	return n
}

func callAnswerServer(t *testing.T, answer func(w http.ResponseWriter, id json.RawMessage, token string)) string {
	t.Helper()
	srv := newTestServer(nil)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta struct {
					Token string `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
		answer(w, msg.ID, msg.Params.Meta.Token)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// Media types are case-insensitive, and the go-sdk reads them so: a JSON
// answer sent as "Application/JSON" was not bounded by MaxMessageBytes
// (the bound looked for "application/json"), so the go-sdk read all of it
// into memory; and an event stream sent as "Text/Event-Stream" was not
// tapped, so its progress notifications were lost.
func TestMediaTypeCase(t *testing.T) {
	t.Run("json", func(t *testing.T) {
		const total = 64 << 20
		var written atomic.Int64
		u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
			w.Header().Set("Content-Type", "Application/JSON")
			writeHugeText(w, id, total, &written)
		})
		tk, _ := mount(t, ServerConfig{Name: "case", Transport: TransportStreamableHTTP, URL: u})
		r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "h", Name: "mcp__case__echo", Input: map[string]any{"text": "x"}}, toolkit.WriterFuncs{})
		if r.State != toolkit.StateError || !strings.Contains(r.Text(), "MaxMessageBytes") || written.Load() >= total {
			t.Errorf("a call answered with %d MiB of JSON as Application/JSON ended %s/%s %.200q, want an error naming MaxMessageBytes before all of it was read",
				written.Load()>>20, r.State, r.Code, r.Text())
		}
	})
	t.Run("event-stream", func(t *testing.T) {
		u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, token string) {
			w.Header().Set("Content-Type", "Text/Event-Stream")
			for i := 1; i <= 3; i++ {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%q,\"progress\":%d,\"total\":3}}\n\n", token, i)
			}
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
		})
		tk, _ := mount(t, ServerConfig{Name: "case", Transport: TransportStreamableHTTP, URL: u})
		r := run(t, testCtx(t), tk, "mcp__case__echo", map[string]any{"text": "x"})
		if r.final.State != toolkit.StateSuccess || r.final.Text() != "done" || len(r.progress) != 3 {
			t.Errorf("a call answered as Text/Event-Stream: final %s %.200q, %d progress reports; want done after 3", r.final.State, r.final.Text(), len(r.progress))
		}
	})
}

// A listing's cursors count toward its MaxMessageBytes: a server paging
// with new cursors of 512 KiB each and no tools was asked for 1000
// pages (half a GiB), every cursor kept (to tell a loop) and sent back.
func TestLargeCursorsBounded(t *testing.T) {
	srv := newTestServer(nil)
	served := answerLists(srv, func(n int64) *sdk.ListToolsResult {
		return &sdk.ListToolsResult{Tools: []*sdk.Tool{}, NextCursor: fmt.Sprintf("%d-%s", n, strings.Repeat("c", 512<<10))}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	c := newTestClient(t, ServerConfig{Name: "cursors", Transport: TransportStreamableHTTP, URL: hs.URL, ConnectTimeout: Duration(2 * time.Minute)})
	_, err := c.ListTools(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "more than") || served.Load() > 2*MaxMessageBytes/(512<<10) {
		t.Errorf("a listing of 512 KiB cursors asked for %d pages, err %v; want it refused past MaxMessageBytes", served.Load(), err)
	}
}

// A result nested deeper than the bus's decoders take (wire.MaxDepth), in
// its structuredContent or _meta, made the final response unreadable to
// the caller: after 10s it took the worker for lost, having called the
// (read-only) tool three times. The deep value is kept as its JSON text.
func TestDeepResultOverBus(t *testing.T) {
	deep := `"x"`
	for range 100 {
		deep = `{"a":` + deep + `}`
	}
	list := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	for _, tc := range []struct{ res, key, text string }{
		{`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + deep + `}`, "structured_content", "ok"},
		{`{"content":[{"type":"text","text":"ok"}],"_meta":` + deep + `}`, "mcp_meta", "ok"},
		{`{"content":[],"structuredContent":{"list":` + list + `}}`, "structured_content", `{"list":` + list + `}`},
	} {
		var calls atomic.Int64
		u := rawAnswerServer(t, func(id json.RawMessage) string {
			calls.Add(1)
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, tc.res)
		})
		s := natstest.Embedded(t, false)
		tk, _ := mount(t, ServerConfig{Name: "deep", Transport: TransportStreamableHTTP, URL: u})
		w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(natstest.Ctx(t)) })
		bc, err := bus.NewClient(natstest.Connect(t, s), nil)
		if err != nil {
			t.Fatal(err)
		}
		r := bc.Invoke(testCtx(t), toolkit.ToolCall{ID: "d", Name: "mcp__deep__echo", Input: map[string]any{"text": "x"}})
		var want any
		_ = json.Unmarshal([]byte(tc.res), &want)
		field := map[string]string{"structured_content": "structuredContent", "mcp_meta": "_meta"}[tc.key]
		wantText, _ := json.Marshal(want.(map[string]any)[field])
		if r.State != toolkit.StateSuccess || r.Text() != tc.text || r.Metadata[tc.key] != string(wantText) || calls.Load() != 1 {
			t.Errorf("a result %.60s…: %s/%s %.200q, metadata %s %.60v; called %d times; want success %.60q with the value as JSON text, called once",
				tc.res, r.State, r.Code, r.Text(), tc.key, r.Metadata[tc.key], calls.Load(), tc.text)
		}
	}
}

// A server's request to the caller (sampling, elicitation) nested deeper
// than the bus's decoders take was lost on the way to the caller, and
// the server waited for its answer until the call's deadline. It is
// refused at once.
func TestDeepAskOverBus(t *testing.T) {
	var deep any = "x"
	for range 100 {
		deep = map[string]any{"a": deep}
	}
	srv := newTestServer(nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "sample", Description: "Ask the caller's model."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 5, Metadata: deep,
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
			if err != nil {
				return nil, nil, err
			}
			return textResult(res.Model), nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	s := natstest.Embedded(t, false)
	tk, _ := mount(t, ServerConfig{Name: "deep", Transport: TransportStreamableHTTP, URL: hs.URL, Timeout: Duration(20 * time.Second)})
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(natstest.Ctx(t)) })
	bc, err := bus.NewClient(natstest.Connect(t, s), &bus.ClientOptions{Asker: func(ctx context.Context, method string, params any) (any, error) {
		return map[string]any{"model": "m", "role": "assistant", "content": map[string]any{"type": "text", "text": "ok"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := bc.Invoke(testCtx(t), toolkit.ToolCall{ID: "d", Name: "mcp__deep__sample", Input: map[string]any{}})
	if took := time.Since(start); took > 10*time.Second || r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "nested deeper") {
		t.Errorf("a sampling request nested 100 levels deep: after %v %s/%s %.200q; want tool_error at once, saying it is nested too deep", took.Round(time.Millisecond), r.State, r.Code, r.Text())
	}
}

// A server's log message whose data nested deeper than the bus's
// decoders take was lost on the way to the caller. Its data is passed
// on as its JSON text.
func TestDeepLogOverBus(t *testing.T) {
	deep := `"x"`
	for range 100 {
		deep = `{"a":` + deep + `}`
	}
	u := rawAnswerServer(t, func(id json.RawMessage) string {
		return `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":` + deep + `}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"shallow"}}` + "\n" +
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, id)
	})
	s := natstest.Embedded(t, false)
	tk, _ := mount(t, ServerConfig{Name: "deep", Transport: TransportStreamableHTTP, URL: u, LogLevel: "debug"})
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(natstest.Ctx(t)) })
	bc, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs []toolkit.LogMessage
	var final *toolkit.Response
	for ev := range bc.Call(testCtx(t), toolkit.ToolCall{ID: "d", Name: "mcp__deep__echo", Input: map[string]any{"text": "x"}}) {
		if ev.Log != nil {
			logs = append(logs, *ev.Log)
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if len(logs) != 2 || logs[0].Data != deep || logs[1].Data != "shallow" || final.State != toolkit.StateSuccess {
		t.Errorf("log messages %.200v, final %s %q; want the deep message's data as JSON text, then the shallow one, then success", logs, final.State, final.Text())
	}
}

// A tool the server renames to a name that sanitises the same (get.x to
// getxx), with the same description and schema, kept its registration,
// which called the old name: every call failed as an unknown tool.
func TestRenamedToolSameName(t *testing.T) {
	srv := newTestServer(nil)
	tool := func(name string) {
		srv.AddTool(&sdk.Tool{Name: name, Description: "Say who.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return textResult(name), nil
			})
	}
	tool("get.x")
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	tk, c := mount(t, ServerConfig{Name: "ren", Transport: TransportStreamableHTTP, URL: hs.URL})
	ctx := testCtx(t)
	if r := run(t, ctx, tk, "mcp__ren__getxx", nil); r.final.Text() != "get.x" {
		t.Fatalf("before the rename: %s %q", r.final.State, r.final.Text())
	}
	srv.RemoveTools("get.x")
	tool("getxx")
	if err := c.Register(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if r := run(t, ctx, tk, "mcp__ren__getxx", nil); r.final.Text() != "getxx" {
		t.Errorf("after get.x was renamed getxx: %s/%s %.200q; want the server's getxx called", r.final.State, r.final.Code, r.final.Text())
	}
}

// The schema orders learned from listings are those of the tools the
// last listing had: a server naming its tools anew at every listing
// (after each tools/list_changed, say) grew them without end.
func TestSchemaOrdersBounded(t *testing.T) {
	srv := newTestServer(nil)
	listing := answerLists(srv, func(n int64) *sdk.ListToolsResult {
		res := &sdk.ListToolsResult{}
		for i := range 500 {
			res.Tools = append(res.Tools, &sdk.Tool{Name: fmt.Sprintf("t%d_%d", n, i), InputSchema: json.RawMessage(`{"type":"object","properties":{"b":{},"a":{}}}`)})
		}
		return res
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	c := newTestClient(t, ServerConfig{Name: "renames", Transport: TransportStreamableHTTP, URL: hs.URL})
	for range 10 {
		if _, err := c.ListTools(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	c.orders.mu.Lock()
	n := len(c.orders.m)
	c.orders.mu.Unlock()
	var schema any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"b":{},"a":{}}}`), &schema)
	if n > 500 || c.orders.of(fmt.Sprintf("t%d_0", listing.Load()), schema) == nil {
		t.Errorf("after 10 listings of 500 new tools each, the client keeps the schema order of %d tools; want those of the last listing's 500", n)
	}
}

// endpointRewriter rewrites the legacy SSE endpoint event to an absolute
// URL at another origin.
type endpointRewriter struct {
	http.ResponseWriter
	to   string
	done bool
}

func (e *endpointRewriter) Write(p []byte) (int, error) {
	if !e.done && bytes.Contains(p, []byte("data: /")) {
		e.done = true
		_, err := e.ResponseWriter.Write(bytes.Replace(p, []byte("data: /"), []byte("data: "+e.to+"/"), 1))
		return len(p), err
	}
	return e.ResponseWriter.Write(p)
}

func (e *endpointRewriter) Flush() { e.ResponseWriter.(http.Flusher).Flush() }

// A server's requests go to the configured server's origin only: a
// legacy SSE server naming an endpoint on another host, or a Streamable
// HTTP server redirecting there, had the worker send its requests (and
// the configured headers, credentials among them) to that host, inside
// the worker's network.
func TestRequestsStayAtOrigin(t *testing.T) {
	var elsewhere atomic.Int64
	var secret atomic.Value
	other := func(target string) string {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			elsewhere.Add(1)
			secret.Store(r.Header.Get("X-Secret"))
			http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusTemporaryRedirect) // a proxy would do as well
		}))
		t.Cleanup(hs.Close)
		return hs.URL
	}
	t.Run("sse", func(t *testing.T) {
		elsewhere.Store(0)
		srv := newTestServer(nil)
		h := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
		var to string
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				w = &endpointRewriter{ResponseWriter: w, to: to}
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		to = other(hs.URL)
		c := newTestClient(t, ServerConfig{Name: "sse", Transport: TransportSSE, URL: hs.URL, Headers: map[string]string{"X-Secret": "s3"}, ConnectTimeout: Duration(5 * time.Second)})
		_, err := c.ListTools(testCtx(t))
		if elsewhere.Load() > 0 || err == nil || !strings.Contains(err.Error(), "origin") {
			t.Errorf("a legacy SSE server naming an endpoint at another origin: %d requests went there (X-Secret %v); listing err %v; want none, and an error naming the origin",
				elsewhere.Load(), secret.Load(), err)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		elsewhere.Store(0)
		srv := newTestServer(nil)
		h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		to := other(hs.URL)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}))
		t.Cleanup(front.Close)
		c := newTestClient(t, ServerConfig{Name: "redir", Transport: TransportStreamableHTTP, URL: front.URL, Headers: map[string]string{"X-Secret": "s3"}, ConnectTimeout: Duration(5 * time.Second)})
		_, err := c.ListTools(testCtx(t))
		if elsewhere.Load() > 0 || err == nil || !strings.Contains(err.Error(), "origin") {
			t.Errorf("a Streamable HTTP server redirecting to another origin: %d requests went there (X-Secret %v); listing err %v; want none, and an error naming the origin",
				elsewhere.Load(), secret.Load(), err)
		}
	})
}

// A Streamable HTTP server answering a call with an event that never ends
// (data without a newline): the go-sdk gives up on the event at 16 MiB,
// then reads the rest of the stream to its end to discard it, so the call
// waited for the server to stop (or for the call's deadline), reading it
// all. The stream now fails past MaxMessageBytes in one event.
func TestEndlessEventRefused(t *testing.T) {
	const total = 1 << 30
	var written atomic.Int64
	u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: ")
		piece := bytes.Repeat([]byte("x"), 64<<10)
		for written.Load() < total {
			if _, err := w.Write(piece); err != nil {
				return
			}
			written.Add(int64(len(piece)))
		}
	})
	tk, _ := mount(t, ServerConfig{Name: "endless", Transport: TransportStreamableHTTP, URL: u})
	start := time.Now()
	r := run(t, testCtx(t), tk, "mcp__endless__echo", map[string]any{"text": "x"})
	if took := time.Since(start); r.final.Code != toolkit.CodeToolError || written.Load() > 4*MaxMessageBytes {
		t.Errorf("a call answered with an endless event: after %v %s/%s %.200q, %d MiB read; want tool_error past %d MiB",
			took.Round(time.Millisecond), r.final.State, r.final.Code, r.final.Text(), written.Load()>>20, MaxMessageBytes>>20)
	}
}
