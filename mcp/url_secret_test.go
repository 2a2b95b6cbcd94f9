package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Many hosted MCP servers take their API key in the URL's query
// (https://host/mcp?api_key=…). When such a server could not be reached,
// the go-sdk's error quoted the request's URL, key and all, and the
// caller's final response (read by the model, and by whoever called
// over the bus) and the worker's errors carried the key. The query's
// values are replaced in the errors of the client.
func TestURLQueryKeyNotInErrors(t *testing.T) {
	const key = "k3y-0f-the-0perator"
	for _, tc := range []struct {
		transport Transport
		mode      Mode
	}{{TransportStreamableHTTP, ModeStateful}, {TransportStreamableHTTP, ModeStateless}, {TransportSSE, ModeStateful}} {
		t.Run(string(tc.transport)+"-"+string(tc.mode), func(t *testing.T) {
			srv := newTestServer(nil)
			var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			if tc.transport == TransportSSE {
				h = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			}
			hs := httptest.NewServer(h)
			tk, c := mount(t, ServerConfig{Name: "keyed", Transport: tc.transport, Mode: tc.mode,
				URL: hs.URL + "/mcp?region=eu&api_key=" + key})
			hs.CloseClientConnections()
			hs.Close()
			r := run(t, testCtx(t), tk, "mcp__keyed__echo", map[string]any{"text": "x"})
			if r.final.Code == "" || strings.Contains(r.final.Text(), key) {
				t.Errorf("a call of a server that is gone ended %s/%s %q: want an error without the URL's key", r.final.State, r.final.Code, r.final.Text())
			}
			_, err := c.ListTools(testCtx(t))
			if err == nil || strings.Contains(err.Error(), key) {
				t.Errorf("listing a server that is gone: %v; want an error without the URL's key", err)
			}
			if err := c.Connect(context.Background()); tc.mode == ModeStateful && (err == nil || strings.Contains(err.Error(), key)) {
				t.Errorf("connecting a server that is gone: %v; want an error without the URL's key", err)
			}
			t.Logf("final %q; listing: %v", r.final.Text(), err)
		})
	}
}
