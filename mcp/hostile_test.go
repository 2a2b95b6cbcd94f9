package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A tool name is one token of the subjects its calls travel on; a name
// of thousands of bytes made the subscription's protocol line longer than
// the NATS server's max_control_line, and the server closed the
// connection. A mounted server listing such a name cut its worker off
// the bus (the other tools too); an MCP client calling such a name cut
// the gateway off, for every session, for good.
func TestLongToolNames(t *testing.T) {
	long := strings.Repeat("n", 5000)
	srv := newTestServer(nil)
	srv.AddTool(&sdk.Tool{Name: long, Description: "A long name.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("ok"), nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	f := mountedFleet(t, ServerConfig{Name: "long", Transport: TransportStreamableHTTP, URL: hs.URL})
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	ctx := testCtx(t)
	if res := callTool(t, ctx, c, "mcp__long__echo", map[string]any{"text": "mounted"}, nil); resultText(res) != "mounted" {
		t.Fatalf("the worker mounting a server with a %d-byte tool name: echo answered %+v %q", len(long), res.Meta, resultText(res))
	}
	for name := range listNames(t, c) {
		if len(name) > toolkit.MaxNameLen {
			t.Errorf("the gateway lists a tool of %d bytes", len(name))
		}
	}

	res := callTool(t, ctx, c, strings.Repeat("x", 5000), nil, nil)
	if res.Meta[GatewayMetaCode] != string(toolkit.CodeNotFound) {
		t.Errorf("a call of a 5000-byte name: %v %.200q, want not_found", res.Meta, resultText(res))
	}
	if st := g.nc.Status(); st != nats.CONNECTED {
		t.Fatalf("after a call of a 5000-byte name the gateway's NATS connection is %v", st)
	}
	if res := callTool(t, ctx, c, "mcp__long__echo", map[string]any{"text": "after"}, nil); resultText(res) != "after" {
		t.Errorf("after a call of a 5000-byte name: echo answered %v %q", res.Meta, resultText(res))
	}
}

// A schema nested deeper than the bus's decoders take (wire.MaxDepth)
// made its worker's announcement unreadable: a mounted server with one
// such tool hid every tool of the worker from the fleet. The tool is
// skipped instead.
func TestDeepSchemaSkipped(t *testing.T) {
	deep := `{"type":"string"}`
	for range 40 { // 80 levels
		deep = `{"type":"object","properties":{"a":` + deep + `}}`
	}
	srv := newTestServer(nil)
	srv.AddTool(&sdk.Tool{Name: "deep", Description: "Deep.", InputSchema: json.RawMessage(deep)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("ok"), nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	f := mountedFleet(t, ServerConfig{Name: "deep", Transport: TransportStreamableHTTP, URL: hs.URL})
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	names := listNames(t, c)
	if names["mcp__deep__echo"] == nil || names["mcp__deep__deep"] != nil {
		t.Errorf("listed %v, want mcp__deep__echo and not mcp__deep__deep", sortedKeys(names))
	}
}

// A result the go-sdk cannot decode (a content type it does not know,
// invalid base64, a field of the wrong type) is the server's answer, not
// a broken connection: it was taken for one, so the shared session was
// dropped (a stdio server killed, with every other call on it), a
// read-only tool was called again, and the model read "the connection
// failed". It now ends the call tool_error naming the server's result,
// once, on a session that stays.
func TestMalformedResult(t *testing.T) {
	for _, res := range []string{
		`{"content":[{"type":"hologram","data":"eA=="}]}`,
		`{"content":[{"type":"image","data":"%%%","mimeType":"image/png"}]}`,
		`{"content":[null]}`,
		`{"content":5}`,
		`{"content":[],"isError":"yes"}`,
	} {
		var calls atomic.Int64
		u := rawAnswerServer(t, func(id json.RawMessage) string {
			calls.Add(1)
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
		})
		tk, c := mount(t, ServerConfig{Name: "odd", Transport: TransportStreamableHTTP, URL: u})
		before := c.current()
		r := run(t, testCtx(t), tk, "mcp__odd__echo", map[string]any{"text": "x"})
		if r.final.Code != toolkit.CodeToolError || !strings.Contains(r.final.Text(), "result cannot be read") || calls.Load() != 1 || c.current() != before {
			t.Errorf("a result %s: final %s/%s %.200q; sent %d times; session kept %v; want tool_error naming the result, sent once, session kept",
				res, r.final.State, r.final.Code, r.final.Text(), calls.Load(), c.current() == before)
		}
	}
}

// rawAnswerServer is the test server over Streamable HTTP (JSON
// answers), but each tools/call is answered with answer's JSON-RPC
// message, or its lines as an event stream.
func rawAnswerServer(t *testing.T, answer func(id json.RawMessage) string) string {
	srv := newTestServer(nil)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
		lines := strings.Split(answer(msg.ID), "\n")
		if len(lines) == 1 {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, lines[0])
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, l := range lines {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", l)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// A mounted server that lists tools too large for its worker's
// announcement (a description of megabytes, or many large tools) made every announcement of
// the worker fail past the NATS server's max_payload: the fleet dropped
// the worker, its other tools with it.
func TestHugeToolKeepsWorkerListed(t *testing.T) {
	srv := newTestServer(nil)
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	f := mountedFleet(t, ServerConfig{Name: "huge", Transport: TransportStreamableHTTP, URL: hs.URL})
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	ok := func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("ok"), nil
	}
	srv.AddTool(&sdk.Tool{Name: "huge", Description: strings.Repeat("d", 2<<20), InputSchema: json.RawMessage(`{"type":"object"}`)}, ok)
	for i := range 100 { // 1.6 MB together
		srv.AddTool(&sdk.Tool{Name: fmt.Sprint("big", i), Description: strings.Repeat("d", 16<<10), InputSchema: json.RawMessage(`{"type":"object"}`)}, ok)
	}
	time.Sleep(8 * time.Second) // past the fleet's TTL of the worker (3 × 2s)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	if names := listNames(t, c); names["mcp__huge__echo"] == nil {
		t.Errorf("after its server listed a 2 MiB tool, the worker's tools are not listed: %v", sortedKeys(names))
	}
}

// A server paging its tool list with one large tool per page stayed
// under MaxListedTools for its thousand pages: a listing kept up to
// 1,000 pages of MaxMessageBytes each. It is refused once the tools
// listed pass MaxMessageBytes.
func TestLargeToolPagesBounded(t *testing.T) {
	srv := newTestServer(nil)
	var served atomic.Int64
	desc := strings.Repeat("d", 1<<20)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			n := served.Add(1)
			if n > 100 {
				return nil, fmt.Errorf("no more pages")
			}
			return &sdk.ListToolsResult{NextCursor: fmt.Sprint("page-", n),
				Tools: []*sdk.Tool{{Name: fmt.Sprint("t", n), Description: desc, InputSchema: map[string]any{"type": "object"}}}}, nil
		}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	// 17 MiB of pages under -race on a loaded machine may take longer than
	// the default 30s to list: the size is what must refuse it.
	c := newTestClient(t, ServerConfig{Name: "pages", Transport: TransportStreamableHTTP, URL: hs.URL,
		ConnectTimeout: Duration(100 * time.Second)})
	_, err := c.ListTools(testCtx(t))
	t.Logf("ListTools: %v; pages served %d", err, served.Load())
	if err == nil || !strings.Contains(err.Error(), "MiB of tools") || served.Load() > 2*MaxMessageBytes>>20 {
		t.Errorf("a listing of 1 MiB tools took %d pages, err %v; want it refused past %d MiB", served.Load(), err, MaxMessageBytes>>20)
	}
}

// A server's requests to its client come one goroutine each; those of a
// call waited in line for its caller without bound, each holding its
// params (up to MaxMessageBytes): a server sending thousands while the
// caller thinks held them all. Past maxPendingAsks a call's further
// requests are refused at once.
func TestServerRequestFloodBounded(t *testing.T) {
	const n = 200
	var refused atomic.Int64
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ask", Description: "Ask the client n times at once.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			done := make(chan struct{}, n)
			for range n {
				go func() {
					defer func() { done <- struct{}{} }()
					rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
					_, err := req.Session.Elicit(rctx, &sdk.ElicitParams{Message: strings.Repeat("m", 64<<10),
						RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}})
					if err != nil && rctx.Err() == nil {
						refused.Add(1)
					}
				}()
			}
			for range n {
				<-done
			}
			return textResult(fmt.Sprint(refused.Load(), " refused")), nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	tk, _ := mount(t, ServerConfig{Name: "asker", Transport: TransportStreamableHTTP, URL: hs.URL})
	release := make(chan struct{})
	ctx := toolkit.WithAsker(testCtx(t), func(ctx context.Context, method string, params any) (any, error) {
		select { // a person who takes their time
		case <-release:
		case <-ctx.Done():
		}
		return map[string]any{"action": "decline"}, nil
	})
	go func() {
		// The person answers once the requests past the bound were
		// refused (or gives up waiting for that), whatever the machine's
		// pace: those that waited are then declined.
		deadline := time.Now().Add(20 * time.Second)
		for refused.Load() < n-maxPendingAsks && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		close(release)
	}()
	r := run(t, ctx, tk, "mcp__asker__ask", nil)
	t.Logf("final %s %q", r.final.State, r.final.Text())
	if refused.Load() < n-maxPendingAsks {
		t.Errorf("%d of %d requests sent at once were refused while the caller was busy; want all but %d", refused.Load(), n, maxPendingAsks)
	}
}

// A server's notifications/resources/updated for resources nobody
// subscribed to were each published to every gateway of the fleet (a
// URI of megabytes too, or thousands a second): only those of resources
// the worker subscribed to are passed on.
func TestUnsolicitedResourceUpdatesDropped(t *testing.T) {
	u := rawAnswerServer(t, func(id json.RawMessage) string {
		var b strings.Builder
		for i := range 100 {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://spam/%d"}}`+"\n", i)
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"sent"}]}}`, id)
		return b.String()
	})
	f := mountedFleet(t, ServerConfig{Name: "spam", Transport: TransportStreamableHTTP, URL: u, ServeResources: true})
	nc := natstest.Connect(t, f.srv)
	var published atomic.Int64
	sub, err := nc.Subscribe(wire.MCPUpdatedSubject("w-mounted"), func(*nats.Msg) { published.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	if res := callTool(t, testCtx(t), c, "mcp__spam__echo", map[string]any{"text": "x"}, nil); resultText(res) != "sent" {
		t.Fatalf("echo: %v %q", res.Meta, resultText(res))
	}
	time.Sleep(200 * time.Millisecond)
	if n := published.Load(); n > 0 {
		t.Errorf("%d updates of resources nobody subscribed to were published to the fleet", n)
	}
}

// Each notifications/tools/list_changed re-registered every tool of the
// server, changed or not, and each registration was a toolkit change its
// worker announced to the whole fleet: a server announcing list changes
// without changing anything (here 30 a second) made its worker send a
// hundred announcements a second, each with all its tools, to every
// client and gateway. Unchanged tools are left as they are.
func TestListChangedFloodAnnouncesNothing(t *testing.T) {
	srv := newTestServer(nil)
	var lists atomic.Int64
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	f := mountedFleet(t, ServerConfig{Name: "flap", Transport: TransportStreamableHTTP, URL: hs.URL})
	nc := natstest.Connect(t, f.srv)
	var announced atomic.Int64
	sub, err := nc.Subscribe(wire.AnnounceSubject("w-mounted"), func(*nats.Msg) { announced.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	lists.Store(0)
	// List changes until the worker re-listed 20 times (a busy machine
	// lists less often; the bound only ends a hang).
	start := time.Now()
	for end := start.Add(time.Minute); lists.Load() < 20 && time.Now().Before(end); time.Sleep(30 * time.Millisecond) {
		// The same tool again: the go-sdk announces a list change.
		sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo text.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
				return textResult(in.Text), nil, nil
			})
	}
	time.Sleep(200 * time.Millisecond)
	took := time.Since(start)
	t.Logf("%v of list changes: %d listings, %d announcements", took.Round(time.Millisecond), lists.Load(), announced.Load())
	if lists.Load() < 20 {
		t.Fatalf("only %d listings in %v: the test did not exercise re-listing", lists.Load(), took)
	}
	// The periodic ones (every 2s) and the first; one per list change
	// (20 and more) is the defect.
	if n, periodic := announced.Load(), int64(took/(2*time.Second))+2; n > periodic {
		t.Errorf("the worker sent %d announcements in %v of list changes that changed nothing, over the %d periodic ones", n, took, periodic)
	}
}

// A client that never sends notifications/initialized (the go-sdk serves
// its requests all the same) had a session the gateway did not track: its
// DELETE waited for ever on a call in flight, which was never cancelled,
// and the session was not counted. Sessions are tracked from their first
// request.
func TestGatewayUninitializedSessionEnds(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	hc := &http.Client{Timeout: 10 * time.Second}
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp == nil {
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	go func() {
		if resp := post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`); resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-f.started:
	case <-time.After(guardTimeout):
		t.Fatal("slow never started")
	}
	if n := g.Sessions(); n != 1 {
		t.Errorf("%d sessions tracked, want the one calling slow", n)
	}
	req, _ := http.NewRequest(http.MethodDelete, u, nil)
	req.Header.Set("Mcp-Session-Id", session)
	dresp, err := hc.Do(req)
	if err != nil {
		t.Errorf("DELETE of the session: %v", err)
	} else {
		dresp.Body.Close()
	}
	waitCancelled(t, f, guardTimeout, "after the DELETE of a session that never sent notifications/initialized")
}

// Every initialize opened an HTTP session holding a go-sdk server with
// the session's tools until its DELETE or SessionTimeout (30 minutes), so
// a client opening sessions in a loop grew the gateway without bound.
// Past GatewayOptions.MaxSessions an initialize is answered 503.
func TestGatewayMaxSessions(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxSessions: 3})
	u := serveGatewayHTTP(t, g)
	initialize := func() (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	var sessions []string
	for range 3 {
		code, id, body := initialize()
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %q", code, body)
		}
		sessions = append(sessions, id)
	}
	if code, _, body := initialize(); code != http.StatusServiceUnavailable || !strings.Contains(body, "3 sessions") {
		t.Errorf("a 4th initialize with MaxSessions 3: %d %q, want 503 saying why", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, u, nil)
	req.Header.Set("Mcp-Session-Id", sessions[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	natstest.WaitFor(t, "the deleted session to end", func() bool { return g.Sessions() == 2 })
	if code, _, body := initialize(); code != http.StatusOK {
		t.Errorf("an initialize after a DELETE: %d %q", code, body)
	}
}
