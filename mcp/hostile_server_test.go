package mcp

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A Streamable HTTP server answering a call with an error status and a
// body that is not JSON (a page of text/html, or an event stream) fails
// that call once the body passes MaxMessageBytes: the go-sdk reads an
// error answer's body whole to look for a JSON-RPC error in it, and the
// bound was only on answers sent as application/json, so an endless
// error page was read into memory until the call's deadline.
func TestErrorAnswerBodyBounded(t *testing.T) {
	for media, line := range map[string]string{
		"text/html":         "<p>x</p>\n",
		"text/event-stream": ": x\n\n", // events of a comment line each
	} {
		t.Run(strings.ReplaceAll(media, "/", "-"), func(t *testing.T) {
			const total = 128 << 20
			var written atomic.Int64
			u := callAnswerServer(t, func(w http.ResponseWriter, _ json.RawMessage, _ string) {
				w.Header().Set("Content-Type", media)
				w.WriteHeader(http.StatusBadRequest)
				piece := []byte(strings.Repeat(line, (64<<10)/len(line)))
				for written.Load() < total {
					if _, err := w.Write(piece); err != nil {
						return
					}
					written.Add(int64(len(piece)))
				}
			})
			tk, _ := mount(t, ServerConfig{Name: "errpage", Transport: TransportStreamableHTTP, URL: u})
			r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "e", Name: "mcp__errpage__echo", Input: map[string]any{"text": "x"}}, toolkit.WriterFuncs{})
			t.Logf("final %s/%s %.200q; the server wrote %d MiB", r.State, r.Code, r.Text(), written.Load()>>20)
			if r.State != toolkit.StateError || !strings.Contains(r.Text(), "Bad Request") {
				t.Errorf("a call answered 400 with an endless %s body ended %s/%s %.200q, want an error naming the status", media, r.State, r.Code, r.Text())
			}
			if written.Load() >= total {
				t.Errorf("the whole %d MiB %s error body was read", total>>20, media)
			}
		})
	}
}
