package mcp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// An HTTP server that answers a call 500 (or 502, 504) received it, and
// may have run it: the go-sdk marks such an answer "rejected by
// transport", as it does a request that could not be sent, and a tool
// neither read-only nor idempotent was sent again on a new session (run
// twice). It is sent once; a 503 or 429 (the server did not take it) is
// still sent again.
func TestErrorStatusCallNotSentAgain(t *testing.T) {
	for _, tc := range []struct {
		status int
		posts  int32
	}{{500, 1}, {502, 1}, {504, 1}, {503, 2}, {429, 2}} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := newTestServer(nil)
			inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			var posts atomic.Int32
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if r.Method == http.MethodPost && bytes.Contains(body, []byte(`"name":"late"`)) {
					posts.Add(1)
					http.Error(w, "upstream trouble", tc.status)
					return
				}
				inner.ServeHTTP(w, r)
			}))
			t.Cleanup(hs.Close)
			tk, c := mount(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: hs.URL})
			t.Cleanup(func() { c.Close() })
			ctx := testCtx(t)
			r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "late", Name: "mcp__h__late", Input: map[string]any{}}, toolkit.WriterFuncs{})
			if r.State == toolkit.StateSuccess {
				t.Fatalf("a call answered %d succeeded: %q", tc.status, r.Text())
			}
			if n := posts.Load(); n != tc.posts {
				t.Errorf("a call of a tool neither read-only nor idempotent answered %d was sent %d times, want %d (final %s/%s %q)", tc.status, n, tc.posts, r.State, r.Code, r.Text())
			}
			if r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "echo", Name: "mcp__h__echo", Input: map[string]any{"text": "x"}}, toolkit.WriterFuncs{}); r.Text() != "x" {
				t.Errorf("echo after: %s/%s %q", r.State, r.Code, r.Text())
			}
		})
	}
}
