package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestStreamClosedWithoutResultFailsCallAlone: a Streamable HTTP server
// that answers a call with an event stream and ends that stream without
// the call's result (a crash of the request's handler, a proxy's idle
// cut) had the go-sdk report the call as "request terminated without
// response", which read as a broken connection: the session was closed,
// failing the other calls running on it, and a read-only call was sent
// again on a new session. A stream with event ids was resumed (a GET
// with Last-Event-ID), and a server that refused that (this one, the
// go-sdk's, without an event store: 400) had the go-sdk close the session
// itself. That call now fails alone, saying the server ended its response
// without a result; the session goes on.
func TestStreamClosedWithoutResultFailsCallAlone(t *testing.T) {
	for name, id := range map[string]string{"without-event-ids": "", "resume-refused": "id: 7\n"} {
		t.Run(name, func(t *testing.T) { testStreamCut(t, id) })
	}
}

// testStreamCut runs TestStreamClosedWithoutResultFailsCallAlone with
// the cut stream's event written after idLine.
func testStreamCut(t *testing.T, idLine string) {
	srv := newTestServer(nil)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var sessions, cuts atomic.Int32
	held, release := make(chan struct{}), make(chan struct{})
	var holding sync.Once
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch {
		case bytes.Contains(body, []byte(`"initialize"`)):
			sessions.Add(1)
		case bytes.Contains(body, []byte("hold me")):
			holding.Do(func() { close(held) })
			<-release
		case bytes.Contains(body, []byte("cut me")):
			cuts.Add(1)
			var msg struct {
				Params struct {
					Meta struct {
						Token string `json:"progressToken"`
					} `json:"_meta"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &msg)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
			fmt.Fprintf(w, "%sevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%q,\"progress\":1}}\n\n", idLine, msg.Params.Meta.Token)
			return // the stream ends, without the result
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	tk, c := mount(t, ServerConfig{Name: "cut", Transport: TransportStreamableHTTP, URL: hs.URL})
	ctx := testCtx(t)
	before := c.current()

	other := make(chan *toolkit.Response, 1)
	go func() { other <- run(t, ctx, tk, "mcp__cut__echo", map[string]any{"text": "hold me"}).final }()
	select {
	case <-held:
	case r := <-other:
		t.Fatalf("the held call ended before the server held it: %s %.200q", r.State, r.Text())
	}

	r := run(t, ctx, tk, "mcp__cut__echo", map[string]any{"text": "cut me"})
	if r.final.State != toolkit.StateError || strings.Contains(r.final.Text(), "MCPConnectionError") || !strings.Contains(r.final.Text(), "ended its response stream without the result") {
		t.Errorf("the call whose stream ended without its result: %s %s %.300q; want an error saying the server ended its response without the result, not a broken connection",
			r.final.State, r.final.Code, r.final.Text())
	}
	if n := cuts.Load(); n != 1 {
		t.Errorf("the call was sent %d times, want once: the server received it", n)
	}
	close(release)
	if r := <-other; r.State != toolkit.StateSuccess || r.Text() != "hold me" {
		t.Errorf("the other call, running on the session: %s %s %.300q", r.State, r.Code, r.Text())
	}
	if !c.Up() || c.current() != before {
		t.Errorf("up %v, same session %v: want the session kept", c.Up(), c.current() == before)
	}
	if r := run(t, ctx, tk, "mcp__cut__echo", map[string]any{"text": "after"}); r.final.State != toolkit.StateSuccess || r.final.Text() != "after" {
		t.Errorf("the next call: %s %s %.300q", r.final.State, r.final.Code, r.final.Text())
	}
	if n := sessions.Load(); n != 1 {
		t.Errorf("%d sessions initialized, want the one", n)
	}
}
