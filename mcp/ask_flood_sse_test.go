package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// askSSEServer is a legacy SSE server with one tool, named tool: its
// call is handed to onCall with the call's progress token and the
// server's event stream, and each POST carrying an answer to onAnswer,
// then held until done is closed (never completed).
func askSSEServer(t *testing.T, tool string, done chan struct{}, onCall func(token string, stream chan<- string), onAnswer func(stream chan<- string)) string {
	stream := make(chan string, maxServerAsks+16)
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
			onAnswer(stream)
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
			result = fmt.Sprintf(`{"tools":[{"name":%q,"inputSchema":{"type":"object"}}]}`, tool)
		case "tools/call":
			onCall(m.Params.Meta.Token, stream)
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

// progressEvent is the event of a progress notification for token.
func progressEvent(token string) string {
	return fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%q,\"progress\":1}}\n\n", token)
}

// pingFloodSSEServer is an askSSEServer whose tool "flood" answers its
// call with n ping requests on its event stream and then a progress
// notification; answers counts the POSTs carrying an answer.
func pingFloodSSEServer(t *testing.T, n int, answers *atomic.Int64, done chan struct{}) string {
	return askSSEServer(t, "flood", done, func(token string, stream chan<- string) {
		var pings []byte
		for i := range n {
			pings = fmt.Appendf(pings, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p%d\",\"method\":\"ping\"}\n\n", i)
		}
		stream <- string(pings)
		stream <- progressEvent(token)
	}, func(chan<- string) { answers.Add(1) })
}

// The go-sdk answers each request of a legacy SSE server on a goroutine
// of its own, each answer a POST of its own without a deadline: a server
// that sends requests (pings) on its event stream and never completes
// the POSTs of their answers held a goroutine and a TCP connection for
// each, without bound. Past maxServerAsks requests unanswered the
// server's further ones are dropped unread, as a stdio server's are.
func TestServerAskFloodBoundedSSE(t *testing.T) {
	var answers atomic.Int64
	done := make(chan struct{})
	url := pingFloodSSEServer(t, httpPingFloodN, &answers, done)
	cfg := ServerConfig{Name: "pings", Transport: TransportSSE, URL: url, Timeout: Duration(time.Minute)}
	tk, _ := mount(t, cfg)
	// The held POSTs end before the client and the server are closed.
	t.Cleanup(func() { close(done) })
	before := runtime.NumGoroutine()
	sent := make(chan struct{})
	go tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "f", Name: "mcp__pings__flood", Input: map[string]any{}}, toolkit.WriterFuncs{Prog: func(toolkit.Progress) error {
		close(sent) // every ping was read
		return nil
	}})
	select {
	case <-sent:
	case <-time.After(guardTimeout):
		t.Fatal("the progress after the pings did not come")
	}
	guard := time.Now().Add(guardTimeout)
	for answers.Load() < maxServerAsks {
		if time.Now().After(guard) {
			t.Fatalf("%d answers posted of %d pings", answers.Load(), httpPingFloodN)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Each answer in flight holds the go-sdk's goroutine, the HTTP
	// connection's two and the test server's: the most seen in a while.
	most := 0
	for range 20 {
		most = max(most, runtime.NumGoroutine()-before)
		time.Sleep(50 * time.Millisecond)
	}
	if most > 6*maxServerAsks+100 {
		t.Errorf("after %d pings of a server that completes no answer, %d answers posted and %d more goroutines", httpPingFloodN, answers.Load(), most)
	}
	if n := answers.Load(); n > maxServerAsks {
		t.Errorf("%d answers posted at once, over the bound of %d", n, maxServerAsks)
	}
}
