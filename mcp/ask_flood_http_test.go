package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// httpPingFloodN is how many pings the hostile Streamable HTTP server
// sends on a call's stream.
const httpPingFloodN = 2000

// pingFloodHTTPServer is a Streamable HTTP server with one tool,
// "flood", whose call it answers with an event stream of n ping
// requests and then a progress notification; it never completes a POST
// carrying an answer (answers counts them), holding each until done is
// closed.
func pingFloodHTTPServer(t *testing.T, n int, answers *atomic.Int64, done chan struct{}) *httptest.Server {
	return askHTTPServer(t, answers, done, func(send func(string), token string) {
		for i := range n {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, i))
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%q,"progress":1}}`, token))
	})
}

// askHTTPServer is a Streamable HTTP server with one tool, "flood",
// whose call it answers with an event stream of the messages onCall
// sends (given the call's progress token), held open until done is
// closed; it never completes a POST carrying an answer (answers counts
// them), holding each until done is closed.
func askHTTPServer(t *testing.T, answers *atomic.Int64, done chan struct{}, onCall func(send func(string), token string)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
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
		if json.Unmarshal(body, &m) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var result string
		switch m.Method {
		case "":
			// An answer to one of the pings: never completed.
			answers.Add(1)
			select {
			case <-done:
			case <-r.Context().Done():
			}
			return
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"p","version":"1"}}`, m.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"flood","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			onCall(func(m string) {
				fmt.Fprintf(w, "data: %s\n\n", m)
				w.(http.Flusher).Flush()
			}, m.Params.Meta.Token)
			select {
			case <-done:
			case <-r.Context().Done():
			}
			return
		default:
			if m.ID == nil {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			result = `{}`
			if m.Method != "ping" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The go-sdk answers each request of a Streamable HTTP server on a
// goroutine of its own, each answer a POST of its own without a
// deadline: a server that sends requests (pings) on its stream and never
// completes the POSTs of their answers held a goroutine and a TCP
// connection for each, without bound. Past maxServerAsks answers in
// flight the further ones are dropped.
func TestServerAskFloodBoundedHTTP(t *testing.T) {
	var answers atomic.Int64
	done := make(chan struct{})
	srv := pingFloodHTTPServer(t, httpPingFloodN, &answers, done)
	cfg := ServerConfig{Name: "pings", Transport: TransportStreamableHTTP, URL: srv.URL, Timeout: Duration(time.Minute)}
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
}

// A Streamable HTTP server's requests past the bound of answers in
// flight were still handled, their answers alone dropped: a sampling or
// elicitation request was put to the caller of its call, who answered
// it in vain, so a server that never completes the POSTs of its answers
// had the worker relay an unbounded stream of asks to callers. Past
// maxServerAsks requests unanswered its requests are refused unhandled,
// and the answers saying so dropped unsent, as the bound's further
// answers are.
func TestServerAsksPastBoundNotRelayedHTTP(t *testing.T) {
	const pings, samples = maxServerAsks + 32, 40
	var answers atomic.Int64
	done := make(chan struct{})
	srv := askHTTPServer(t, &answers, done, func(send func(string), _ string) {
		for i := range pings {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, i))
		}
		// The samples come once the answers in flight are at the bound.
		for answers.Load() < maxServerAsks {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		for i := range samples {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"s%d","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":8}}`, i))
		}
	})
	var log lockedLog
	c, err := NewClient(ServerConfig{Name: "asks", Transport: TransportStreamableHTTP, URL: srv.URL, Timeout: Duration(time.Minute)},
		&Options{RetryInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tk := toolkit.New(nil)
	if err := c.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(done) })
	var asked atomic.Int64
	ctx := toolkit.WithAsker(testCtx(t), func(context.Context, string, any) (any, error) {
		asked.Add(1)
		return map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "hello"}}, nil
	})
	go tk.Dispatch(ctx, toolkit.ToolCall{ID: "f", Name: "mcp__asks__flood", Input: map[string]any{}}, toolkit.WriterFuncs{})
	// Every answer but those in flight is dropped: the pings' past the
	// bound and the samples', whether the samples were handled or not.
	want := int64(pings + samples - maxServerAsks)
	guard := time.Now().Add(guardTimeout)
	for c.http.answers.dropped.Load() < want {
		if time.Now().After(guard) {
			t.Fatalf("%d answers dropped, want %d; %d answers posted, %d samples put to the caller", c.http.answers.dropped.Load(), want, answers.Load(), asked.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := asked.Load(); n > 0 {
		t.Errorf("%d of %d sampling requests past the bound of %d answers in flight were put to the caller", n, samples, maxServerAsks)
	}
	if n := strings.Count(log.String(), "faster than it accepts their answers"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, log.String())
	}
}
