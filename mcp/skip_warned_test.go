package mcp

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// A tool skipped at registration (a name that collides after sanitising,
// one too long, a schema the toolkit refuses) was warned of again at
// every re-listing: a server listing thousands of such tools and
// announcing a change every second (a re-listing each, paced) wrote
// thousands of warnings a second to the worker's log, for as long as it
// ran. Each is warned of once for as long as the listings repeat it,
// and again when it comes back after a listing without it.
func TestSkippedToolWarnedOnce(t *testing.T) {
	deep := map[string]any{"type": "string"}
	for range 30 { // 60 levels: past toolkit.MaxSchemaDepth
		deep = map[string]any{"type": "object", "properties": map[string]any{"a": deep}}
	}
	srv := newTestServer(nil)
	answerLists(srv, func(n int64) *sdk.ListToolsResult {
		r := &sdk.ListToolsResult{Tools: []*sdk.Tool{
			{Name: "ok", InputSchema: map[string]any{"type": "object"}},
			{Name: "o.k", InputSchema: map[string]any{"type": "object"}},                    // collides with o*k
			{Name: "o*k", InputSchema: map[string]any{"type": "object"}},                    // skipped: oxk taken
			{Name: strings.Repeat("n", 300), InputSchema: map[string]any{"type": "object"}}, // too long
			{Name: "deep", InputSchema: deep},                                               // refused by the toolkit
		}}
		if n == 3 {
			r.Tools = r.Tools[:1] // fixed, then broken again at the fourth listing
		}
		return r
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	var log lockedLog
	c, err := NewClient(ServerConfig{Name: "s", Transport: TransportStreamableHTTP, URL: hs.URL},
		&Options{RetryInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tk := toolkit.New(nil)
	for i, want := range []int{3, 3, 3, 6} {
		if err := c.Register(testCtx(t), tk); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(log.String(), "level=WARN"); n != want {
			t.Errorf("after listing %d: %d warnings, want %d; log:\n%s", i+1, n, want, log.String())
		}
	}
	if got := fmt.Sprint(len(tk.Tools())); got != "2" {
		t.Errorf("%s tools registered, want ok and o.k", got)
	}
}
