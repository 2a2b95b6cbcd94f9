package mcp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestRequestRefusedForSizeFailsAloneSSE: a legacy SSE server (or a proxy
// before it) refusing the POST of a request for its size (413, 414, 431)
// had the go-sdk take the failed write for a broken connection: the call
// failed as MCPConnectionError, the session ended with every other call
// running on it, and a read-only call was sent again on a new session.
// As over Streamable HTTP, such a refusal now fails that call alone,
// saying the server refused it as too large, and the session goes on.
func TestRequestRefusedForSizeFailsAloneSSE(t *testing.T) {
	for _, status := range []int{http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv := newTestServer(nil)
			h := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			var sessions, refused atomic.Int32
			held, release := make(chan struct{}), make(chan struct{})
			var holding, releasing sync.Once
			t.Cleanup(func() { releasing.Do(func() { close(release) }) })
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					sessions.Add(1)
					h.ServeHTTP(w, r)
					return
				}
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				switch {
				case bytes.Contains(body, []byte("refuse me")):
					refused.Add(1)
					http.Error(w, "<html>too large</html>", status) // a proxy's page
					return
				case bytes.Contains(body, []byte("hold me")):
					holding.Do(func() { close(held) })
					<-release
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(hs.Close)
			tk, c := mount(t, ServerConfig{Name: "s", Transport: TransportSSE, URL: hs.URL})
			ctx := testCtx(t)
			before := c.current()

			other := make(chan *toolkit.Response, 1)
			go func() { other <- run(t, ctx, tk, "mcp__s__echo", map[string]any{"text": "hold me"}).final }()
			select {
			case <-held:
			case r := <-other:
				t.Fatalf("the held call ended before the server held it: %s %.200q", r.State, r.Text())
			}

			r := run(t, ctx, tk, "mcp__s__echo", map[string]any{"text": "refuse me"})
			if r.final.State != toolkit.StateError || strings.Contains(r.final.Text(), "MCPConnectionError") ||
				!strings.Contains(r.final.Text(), fmt.Sprintf("refused the request as too large (HTTP %d", status)) {
				t.Errorf("the refused call: %s %s %.300q; want an error saying the server refused it as too large, not a broken connection", r.final.State, r.final.Code, r.final.Text())
			}
			if n := refused.Load(); n != 1 {
				t.Errorf("the refused call was sent %d times, want once", n)
			}
			releasing.Do(func() { close(release) })
			if r := <-other; r.State != toolkit.StateSuccess || r.Text() != "hold me" {
				t.Errorf("the other call, running on the session: %s %s %.300q", r.State, r.Code, r.Text())
			}
			if !c.Up() || c.current() != before {
				t.Errorf("up %v, same session %v: want the session kept", c.Up(), c.current() == before)
			}
			if r := run(t, ctx, tk, "mcp__s__echo", map[string]any{"text": "after"}); r.final.State != toolkit.StateSuccess || r.final.Text() != "after" {
				t.Errorf("the next call: %s %s %.300q", r.final.State, r.final.Code, r.final.Text())
			}
			if n := sessions.Load(); n != 1 {
				t.Errorf("%d SSE sessions opened, want the one: the refusal ended it", n)
			}
		})
	}
}
