package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// pingReuseSSEServer is a legacy SSE server with one tool, "reuse",
// whose call it answers with a ping of id "p"; each POST of an answer it
// holds until done is closed (answers counts them) and, the first
// maxServerAsks times, answers with another ping of the same id "p".
// After the last ping it sends a progress notification.
func pingReuseSSEServer(t *testing.T, answers *atomic.Int64, done chan struct{}) string {
	stream := make(chan string, maxServerAsks+16)
	var token atomic.Value
	ping := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: endpoint\ndata: /message\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case m := <-stream:
					fmt.Fprint(w, m)
					w.(http.Flusher).Flush()
				case <-done:
					return
				case <-r.Context().Done():
					return
				}
			}
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Meta            struct {
					Token string `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if r.Method != http.MethodPost || json.Unmarshal(body, &m) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if m.Method == "" {
			// An answer to the ping: the client took the id as free again
			// once it wrote it, so the next ping reuses it. Never completed.
			switch n := answers.Add(1); {
			case n < maxServerAsks:
				stream <- ping
			case n == maxServerAsks:
				stream <- ping
				stream <- fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%q,\"progress\":1}}\n\n", token.Load())
			}
			select {
			case <-done:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
		var result string
		switch m.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"p","version":"1"}}`, m.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"reuse","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			token.Store(m.Params.Meta.Token)
			stream <- ping
			return
		default:
			if m.ID == nil {
				return
			}
			result = `{}`
		}
		stream <- fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", m.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/sse"
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
