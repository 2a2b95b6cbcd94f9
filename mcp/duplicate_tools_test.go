package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestDuplicateToolNamesKeepFirst: a server listing two tools under one
// name (on one page, or on two) had them mixed: the first one's
// registration (its description and schema) took the second's key order,
// and it was taken for read-only, so safe to send again, for the second's
// annotations; ListTools returned both, and a warning that misnamed the
// cause came at every re-listing. The first of each name is kept, whole,
// as MCP clients do, and the duplicate is warned of once.
func TestDuplicateToolNamesKeepFirst(t *testing.T) {
	first := &sdk.Tool{Name: "x", Description: "first",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string","maxLength":10},"alpha":{"type":"string","minLength":1e0}}}`)}
	second := &sdk.Tool{Name: "x", Description: "second", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"properties":{"alpha":{"type":"number"},"beta":{"type":"number"},"zeta":{"type":"number"}},"type":"object"}`)}
	other := &sdk.Tool{Name: "y", Description: "other", InputSchema: json.RawMessage(`{"type":"object"}`)}
	for name, pages := range map[string][][]*sdk.Tool{
		"one-page":  {{first, other, second}},
		"two-pages": {{first, other}, {second}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newTestServer(nil)
			srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
				return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
					if method != "tools/list" {
						return next(ctx, method, req)
					}
					page := 0
					if p, _ := req.GetParams().(*sdk.ListToolsParams); p != nil && p.Cursor != "" {
						page = 1
					}
					res := &sdk.ListToolsResult{Tools: pages[page]}
					if page+1 < len(pages) {
						res.NextCursor = "next"
					}
					return res, nil
				}
			})
			hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
			t.Cleanup(hs.Close)
			var log lockedLog
			c, err := NewClient(ServerConfig{Name: "dup", Transport: TransportStreamableHTTP, URL: hs.URL},
				&Options{RetryInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			tk := toolkit.New(nil)
			for range 2 { // a re-listing warns no more
				if err := c.Register(testCtx(t), tk); err != nil {
					t.Fatal(err)
				}
			}

			listed, err := c.ListTools(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range listed {
				names = append(names, tl.Name+"="+tl.Description)
			}
			if !slices.Equal(names, []string{"x=first", "y=other"}) {
				t.Errorf("ListTools: %v, want x (the first) and y", names)
			}
			tl, ok := tk.Get("mcp__dup__x")
			if !ok {
				t.Fatalf("no mcp__dup__x; tools %v", c.Tools())
			}
			if tl.ReadOnly() || tl.Idempotency() != toolkit.IdempotencyUnknown || c.retrySafe("x") {
				t.Errorf("mcp__dup__x: read-only %v, idempotency %v, sent again when it failed %v; want the first's: none of these (the second is read-only)",
					tl.ReadOnly(), tl.Idempotency(), c.retrySafe("x"))
			}
			fs, _ := tk.Schema("mcp__dup__x")
			b, err := json.Marshal(fs)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if fs.Function.Description != "first" || strings.Contains(s, `"beta"`) || strings.Contains(s, `"number"`) ||
				strings.Index(s, `"zeta"`) > strings.Index(s, `"alpha"`) || strings.Index(s, `"type":"object"`) > strings.Index(s, `"properties"`) {
				t.Errorf("mcp__dup__x's schema: %s; want the first tool's, in its order (type, then properties zeta, alpha)", s)
			}
			out := log.String()
			if n := strings.Count(out, "level=WARN"); n != 1 || !strings.Contains(out, "more than once") || !strings.Contains(out, `\"x\"`) {
				t.Errorf("log %q: want one warning naming x, listed more than once", out)
			}
		})
	}
}
