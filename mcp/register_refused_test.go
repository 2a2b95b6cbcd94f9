package mcp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// A tool the toolkit refuses hands its sanitised name to the next tool
// of the server under that name, and the batch was registered again for
// it, each of the server's tools validated again: a server listing
// thousands of tools whose names sanitise alike ("a·", "a•", …: "ax"),
// each with a schema the toolkit refuses, beside its good tools, had
// its registration (and every re-listing's) validate the batch once for
// each, which took its worker many minutes of CPU with the registration
// lock held. The tools the toolkit refuses whatever else is registered
// are now found at once.
func TestRefusedToolsUnderOneNameRegisterAtOnce(t *testing.T) {
	deep := map[string]any{"type": "string"}
	for range 30 { // 60 levels: past toolkit.MaxSchemaDepth
		deep = map[string]any{"type": "object", "properties": map[string]any{"a": deep}}
	}
	const good, alike = 1000, 3000
	srv := newTestServer(nil)
	answerLists(srv, func(int64) *sdk.ListToolsResult {
		r := &sdk.ListToolsResult{}
		for i := range alike {
			r.Tools = append(r.Tools, &sdk.Tool{Name: "a" + string(rune(0x4E00+i)), InputSchema: deep})
		}
		for i := range good {
			r.Tools = append(r.Tools, &sdk.Tool{Name: fmt.Sprint("good", i),
				InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}})
		}
		// The name is served when one of those under it is valid.
		r.Tools = append(r.Tools, &sdk.Tool{Name: "a!", InputSchema: map[string]any{"type": "object"}})
		return r
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	c := newTestClient(t, ServerConfig{Name: "alike", Transport: TransportStreamableHTTP, URL: hs.URL})
	tk := toolkit.New(nil)
	done := make(chan error, 1)
	go func() { done <- c.Register(testCtx(t), tk) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * guardTimeout):
		t.Fatalf("registering %d tools, %d of them refused under one sanitised name, has not ended %v later", good+alike+1, alike, 2*guardTimeout)
	}
	if n := len(tk.Tools()); n != good+1 {
		t.Errorf("%d tools registered, want %d", n, good+1)
	}
	if _, ok := tk.Get("mcp__alike__ax"); !ok {
		t.Errorf("mcp__alike__ax is not registered, though a! is valid")
	}
}
