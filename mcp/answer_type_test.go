package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// A Streamable HTTP server (or a proxy before it) answering a call 200
// with a body that is neither JSON nor an event stream (an HTML page, a
// text, nothing) had the go-sdk take the session for broken: every call
// running on it failed with "unsupported content type", the session
// ended, and the read-only tool was called a second time. The call now
// ends alone with tool_error naming the type and the start of the body;
// it is not sent again, and the session stays.
func TestUnsupportedAnswerTypeFailsCallAlone(t *testing.T) {
	for _, tc := range []struct{ contentType, body string }{
		{"text/html; charset=utf-8", "<html><title>Blocked by policy</title></html>"},
		{"text/plain", "upstream timed out"},
		{"", ""},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			var calls atomic.Int64
			u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
				calls.Add(1)
				w.Header()["Content-Type"] = nil // no sniffing: the type the case gives, none for ""
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				fmt.Fprint(w, tc.body)
			})
			tk, c := mount(t, ServerConfig{Name: "amiss", Transport: TransportStreamableHTTP, URL: u})
			before := c.current()
			r := run(t, testCtx(t), tk, "mcp__amiss__echo", map[string]any{"text": "x"})
			t.Logf("final %s/%s %.400q", r.final.State, r.final.Code, r.final.Text())
			want := fmt.Sprintf("%q", strings.Split(tc.contentType, ";")[0])
			if r.final.Code != toolkit.CodeToolError || strings.Contains(r.final.Text(), "MCPConnectionError") || !strings.Contains(r.final.Text(), want) ||
				!strings.Contains(r.final.Text(), tc.body) || calls.Load() != 1 || c.current() != before {
				t.Errorf("a call answered %s %q: final %s/%s %.300q; sent %d times; session kept %v; want tool_error naming %s and the body, sent once, session kept",
					tc.contentType, tc.body, r.final.State, r.final.Code, r.final.Text(), calls.Load(), c.current() == before, want)
			}
		})
	}
}

// A Streamable HTTP server answering a call 200 application/json with a
// body that is not JSON (a proxy's HTML page under the API's type, a
// body cut short, a JSON error of its own) had the go-sdk take the session for broken, as with
// another type: every call running on it failed, the session ended, and
// the read-only tool was called a second time. The call now ends alone
// with tool_error saying the answer is not a JSON-RPC message, and the
// session stays.
func TestInvalidJSONAnswerFailsCallAlone(t *testing.T) {
	for _, body := range []string{
		"<html><title>Blocked by policy</title></html>",
		`{"jsonrpc":"2.0","id":`,
		`{"error":"upstream"}`,
	} {
		t.Run(body, func(t *testing.T) {
			var calls atomic.Int64
			u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, body)
			})
			tk, c := mount(t, ServerConfig{Name: "amiss", Transport: TransportStreamableHTTP, URL: u})
			before := c.current()
			r := run(t, testCtx(t), tk, "mcp__amiss__echo", map[string]any{"text": "x"})
			t.Logf("final %s/%s %.400q", r.final.State, r.final.Code, r.final.Text())
			if r.final.Code != toolkit.CodeToolError || strings.Contains(r.final.Text(), "MCPConnectionError") || !strings.Contains(r.final.Text(), "not a JSON-RPC message") ||
				calls.Load() != 1 || c.current() != before {
				t.Errorf("a call answered application/json %q: final %s/%s %.300q; sent %d times; session kept %v; want tool_error saying it is not a JSON-RPC message, sent once, session kept",
					body, r.final.State, r.final.Code, r.final.Text(), calls.Load(), c.current() == before)
			}
		})
	}
}

// A Streamable HTTP server (or a proxy before it) answering a call 202
// Accepted or 204 No Content, as a notification is answered, with no
// result, had the go-sdk take the session for broken, as with a 200 of
// another type: every call running on it failed with "unsupported
// content type", the session ended, and the read-only tool was called a
// second time. The call now ends alone with tool_error naming the
// status, and the session stays.
func TestAcceptedAnswerToCallFailsCallAlone(t *testing.T) {
	for _, status := range []int{http.StatusAccepted, http.StatusNoContent} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			var calls atomic.Int64
			u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
				calls.Add(1)
				w.WriteHeader(status)
			})
			tk, c := mount(t, ServerConfig{Name: "amiss", Transport: TransportStreamableHTTP, URL: u})
			before := c.current()
			r := run(t, testCtx(t), tk, "mcp__amiss__echo", map[string]any{"text": "x"})
			t.Logf("final %s/%s %.400q", r.final.State, r.final.Code, r.final.Text())
			want := fmt.Sprintf("HTTP %d", status)
			if r.final.Code != toolkit.CodeToolError || strings.Contains(r.final.Text(), "MCPConnectionError") || !strings.Contains(r.final.Text(), want) ||
				calls.Load() != 1 || c.current() != before {
				t.Errorf("a call answered %d: final %s/%s %.300q; sent %d times; session kept %v; want tool_error naming %s, sent once, session kept",
					status, r.final.State, r.final.Code, r.final.Text(), calls.Load(), c.current() == before, want)
			}
		})
	}
}

// A Streamable HTTP server answering a call 200 application/json with a
// JSON-RPC message other than the call's response (a response to an id
// never asked, a request or a notification of its own) left the call
// waiting for a response that could no longer come, its POST answered:
// until ServerConfig.Timeout, or for ever without one. The call now ends
// at once with tool_error saying the answer is not the request's
// response; the session stays.
func TestForeignJSONAnswerFailsCallAlone(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":987654321,"result":{"content":[{"type":"text","text":"stranger"}]}}`,
		`{"jsonrpc":"2.0","id":"stranger","error":{"code":-32603,"message":"stranger"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
	} {
		t.Run(body, func(t *testing.T) {
			var calls atomic.Int64
			u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, body)
			})
			tk, c := mount(t, ServerConfig{Name: "amiss", Transport: TransportStreamableHTTP, URL: u, Timeout: Duration(time.Minute)})
			before := c.current()
			r := run(t, testCtx(t), tk, "mcp__amiss__echo", map[string]any{"text": "x"})
			t.Logf("final %s/%s %.400q", r.final.State, r.final.Code, r.final.Text())
			if r.final.Code != toolkit.CodeToolError || !strings.Contains(r.final.Text(), "not the response to the request") ||
				calls.Load() != 1 || c.current() != before {
				t.Errorf("a call answered application/json %q: final %s/%s %.300q; sent %d times; session kept %v; want tool_error saying it is not the request's response, sent once, session kept",
					body, r.final.State, r.final.Code, r.final.Text(), calls.Load(), c.current() == before)
			}
			if r := run(t, testCtx(t), tk, "mcp__amiss__echo", map[string]any{"text": "x"}); r.final.Code != toolkit.CodeToolError || calls.Load() != 2 {
				t.Errorf("the call after: %s/%s %.300q", r.final.State, r.final.Code, r.final.Text())
			}
		})
	}
}
