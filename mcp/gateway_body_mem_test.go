package mcp

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestGatewayBodyNotHeldDuringCall: the id check (checkIDs) reads a POST's
// body into memory and hands the go-sdk a reader of it; the request keeps
// its body as long as the call it carries runs, so every tools/call held
// its whole body (up to 4 MiB) until the tool answered, next to the
// go-sdk's own copy. A call of a slow tool sent with a body near the bound
// now costs the gateway no such copy while it runs.
func TestGatewayBodyNotHeldDuringCall(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	const v = "2025-06-18"
	session := openSessionAt(t, u, v)
	const calls = 8
	// The padding is a member of the message the go-sdk drops: only the
	// bytes of the body itself could hold it.
	pad := `{"pad":"` + strings.Repeat("x", gatewayMaxBody-200) + `",`
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	codes := make(chan int, calls)
	for i := range calls {
		go func() {
			tail := fmt.Sprintf(`"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, 100+i)
			req, _ := http.NewRequest(http.MethodPost, u, io.MultiReader(strings.NewReader(pad), strings.NewReader(tail)))
			req.ContentLength = int64(len(pad) + len(tail))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", v)
			resp, err := (&http.Client{Timeout: guardTimeout}).Do(req)
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range calls {
		select {
		case <-f.started:
		case <-time.After(guardTimeout):
			t.Fatal("slow never started")
		}
	}
	grown := heap() - before
	g.Interrupt()
	for range calls {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a call: HTTP %d", code)
		}
	}
	// Held, the bodies were calls × 4 MiB; half of that is the bound.
	if limit := int64(calls * gatewayMaxBody / 2); grown > limit {
		t.Errorf("with %d calls of %d-byte bodies in flight the heap grew by %d MiB, more than %d MiB: the bodies are held while their calls run",
			calls, len(pad), grown>>20, limit>>20)
	}
}
