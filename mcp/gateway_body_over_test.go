package mcp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestGatewayOversizedChunkedBodyReadOnce: a chunked POST body past the
// bound (4 MiB) was read by the id check up to the bound and one byte,
// then handed to the go-sdk, which read all of it again from memory only
// to answer 413: about seven times the bound allocated per request, most
// of it twice over. The gateway now answers the 413 itself, as the go-sdk
// words it, having read the body once.
func TestGatewayOversizedChunkedBodyReadOnce(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	const v = "2025-06-18"
	session := openSessionAt(t, u, v)
	body := `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", gatewayMaxBody) + `"}}}`
	// The body is read from memory and answered into a recorder, so that
	// what is counted is the gateway's (and the go-sdk's) work alone,
	// against one read of the body up to the bound and one byte.
	const posts = 4
	allocated := func(do func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range posts {
			do()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / posts
	}
	oneRead := allocated(func() { io.ReadAll(io.LimitReader(strings.NewReader(body), gatewayMaxBody+1)) })
	per := allocated(func() {
		// No Content-Length: the body comes chunked.
		req := httptest.NewRequest(http.MethodPost, u, io.NopCloser(strings.NewReader(body)))
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", v)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "request body exceeds 4194304 bytes") {
			t.Fatalf("a chunked body of %d bytes: HTTP %d %q, want 413", len(body), rec.Code, rec.Body)
		}
	})
	if per > oneRead*3/2 {
		t.Errorf("a refused chunked body cost %d KiB of allocations, one read of it %d KiB: it is read more than once", per>>10, oneRead>>10)
	}
	// The session is unharmed.
	if code, msgs := rpcPost(t, u, session, v, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); code != http.StatusOK || len(msgs) != 1 || msgs[0]["id"] != float64(6) {
		t.Fatalf("a ping after: HTTP %d, %v", code, msgs)
	}
}
