package mcp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestRequestRefusedAsTooLargeKeepsSession: a Streamable HTTP server
// refuses a request too large for it with an HTTP error status
// (server-everything: 413 past 4 MB of body, 431 past 16 KiB of
// headers) without a JSON-RPC error in its body, which the go-sdk took for
// a broken connection: the call failed as MCPConnectionError and every
// other call running on the same MCP session failed with it. A caller
// chooses a call's arguments, so one caller's large call ended the others'.
// Such a refusal now fails that call alone, saying the server refused it
// as too large, and the session goes on.
func TestRequestRefusedAsTooLargeKeepsSession(t *testing.T) {
	tk, c := mount(t, ServerConfig{Name: "ev", Transport: TransportStreamableHTTP, URL: startEverythingHTTP(t, "streamableHttp") + "/mcp"})
	ctx := testCtx(t)
	running := make(chan struct{})
	other := make(chan *toolkit.Response, 1)
	go func() {
		running := running
		var final *toolkit.Response
		for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "long", Name: "mcp__ev__trigger-long-running-operation", Input: map[string]any{"duration": 2, "steps": 4}}) {
			if ev.Progress != nil && running != nil {
				close(running)
				running = nil
			}
			if ev.Final != nil {
				final = ev.Final
			}
		}
		other <- final
	}()
	select {
	case <-running:
	case r := <-other:
		t.Fatalf("the long call ended before its first progress: %+v", r)
	}

	r := run(t, ctx, tk, "mcp__ev__echo", map[string]any{"message": strings.Repeat("x", 5<<20)})
	if r.final.State != toolkit.StateError || strings.Contains(r.final.Text(), "MCPConnectionError") || !strings.Contains(r.final.Text(), "413") {
		t.Errorf("the call of 5 MB: %s %s %.300s; want an error saying the server refused it (413), not a broken connection", r.final.State, r.final.Code, r.final.Text())
	}
	if r := <-other; r == nil || r.State != toolkit.StateSuccess {
		t.Errorf("the other call, running on the session: %+v", r)
	}
	if !c.Up() {
		t.Error("the server is down after refusing one request")
	}
	if r := run(t, ctx, tk, "mcp__ev__echo", map[string]any{"message": "after"}); r.final.State != toolkit.StateSuccess || r.final.Text() != "Echo: after" {
		t.Errorf("the next call: %s %s %.300s", r.final.State, r.final.Code, r.final.Text())
	}
}

// TestRequestRefusedForSizeFailsAlone: each status by which an HTTP server
// (or a proxy before it) refuses a request for its size, with a body that
// is no JSON-RPC error, fails that call alone with a message saying so;
// the session stays, and the next call is served on it.
func TestRequestRefusedForSizeFailsAlone(t *testing.T) {
	for _, status := range []int{http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv := newTestServer(nil)
			h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			var sessions atomic.Int32
			hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte("refuse me")) {
					http.Error(rw, "<html>too large</html>", status) // a proxy's page
					return
				}
				if bytes.Contains(body, []byte(`"initialize"`)) {
					sessions.Add(1)
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(rw, r)
			}))
			t.Cleanup(hs.Close)
			tk, c := mount(t, ServerConfig{Name: "s", Transport: TransportStreamableHTTP, URL: hs.URL})
			ctx := testCtx(t)
			r := run(t, ctx, tk, "mcp__s__echo", map[string]any{"text": "refuse me"})
			if r.final.State != toolkit.StateError || !strings.Contains(r.final.Text(), fmt.Sprintf("refused the request as too large (HTTP %d", status)) {
				t.Errorf("the refused call: %s %s %.300s", r.final.State, r.final.Code, r.final.Text())
			}
			if !c.Up() {
				t.Error("the server is down after refusing one request")
			}
			if r := run(t, ctx, tk, "mcp__s__echo", map[string]any{"text": "after"}); r.final.State != toolkit.StateSuccess || r.final.Text() != "after" {
				t.Errorf("the next call: %s %s %.300s", r.final.State, r.final.Code, r.final.Text())
			}
			if n := sessions.Load(); n != 1 {
				t.Errorf("%d sessions initialized, want the one: the refusal ended it", n)
			}
		})
	}
}
