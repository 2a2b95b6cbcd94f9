package mcp

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// pingReuseSSEServer is an askSSEServer whose tool "reuse" answers its
// call with a ping of id "p"; each POST of an answer (answers counts
// them), the first maxServerAsks times, brings another ping of the same
// id "p", and the last a progress notification after it.
func pingReuseSSEServer(t *testing.T, answers *atomic.Int64, done chan struct{}) string {
	var token atomic.Value
	ping := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n\n"
	return askSSEServer(t, "reuse", done, func(tok string, stream chan<- string) {
		token.Store(tok)
		stream <- ping
	}, func(stream chan<- string) {
		// The client took the id as free again once it wrote the
		// answer, so the next ping reuses it.
		switch n := answers.Add(1); {
		case n < maxServerAsks:
			stream <- ping
		case n == maxServerAsks:
			stream <- ping
			stream <- progressEvent(token.Load().(string))
		}
	})
}

// A legacy SSE server reusing the id of a request whose answer's POST it
// holds: the go-sdk takes the id as free once it starts writing the
// answer, and answers the new request as well, so counting requests by
// id let such a server hold a POST and a goroutine per request past
// maxServerAsks. Each request read counts until an answer is written.
func TestServerAskReusedIDBoundedSSE(t *testing.T) {
	var answers atomic.Int64
	done := make(chan struct{})
	url := pingReuseSSEServer(t, &answers, done)
	cfg := ServerConfig{Name: "pings", Transport: TransportSSE, URL: url, Timeout: Duration(time.Minute)}
	tk, _ := mount(t, cfg)
	t.Cleanup(func() { close(done) })
	sent := make(chan struct{})
	go tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "r", Name: "mcp__pings__reuse", Input: map[string]any{}}, toolkit.WriterFuncs{Prog: func(toolkit.Progress) error {
		close(sent) // the last ping was read
		return nil
	}})
	guard := time.After(guardTimeout)
	for answers.Load() < maxServerAsks {
		select {
		case <-guard:
			t.Fatalf("%d answers posted, want at least %d", answers.Load(), maxServerAsks)
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case <-sent:
	case <-guard:
		t.Fatal("the progress after the last ping did not come")
	}
	// The last ping, read before the progress, is to be dropped: no
	// answer of it is to come.
	for range 40 {
		if n := answers.Load(); n > maxServerAsks {
			t.Fatalf("%d answers posted at once, over the bound of %d", n, maxServerAsks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
