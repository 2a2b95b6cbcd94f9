package mcp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A stateful server whose sessions do not last past the handshake (two
// replicas behind a balancer without sticky sessions: the handshake on
// one, tools/list on the other, which answers 404) is an unreachable
// server, retried with backoff. Each reconnect asked for a re-listing,
// and the re-listing reconnected, so the worker connected to it again
// and again without pause, for as long as it ran.
func TestReconnectingListingDoesNotLoop(t *testing.T) {
	replica := func() http.Handler {
		srv := newTestServer(nil)
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	}
	a, b := replica(), replica()
	var inits atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			a.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch {
		case bytes.Contains(body, []byte(`"method":"initialize"`)):
			inits.Add(1)
			a.ServeHTTP(w, r)
		case bytes.Contains(body, []byte(`"method":"notifications/initialized"`)):
			a.ServeHTTP(w, r)
		default:
			b.ServeHTTP(w, r) // the other replica: no such session
		}
	}))
	t.Cleanup(hs.Close)

	c, err := NewClient(ServerConfig{Name: "lb", Transport: TransportStreamableHTTP, URL: hs.URL},
		&Options{RetryInterval: time.Hour, MaxRetryInterval: time.Hour, RelistInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tk := toolkit.New(nil)
	if err := c.Start(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the background retry", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.retry
	})
	// The retry waits an hour: nothing else may connect meanwhile.
	before := inits.Load()
	time.Sleep(2 * time.Second)
	t.Logf("initialized %d times", inits.Load())
	if n := inits.Load(); n > before+2 || n > 4 {
		t.Errorf("the server was initialized %d times (%d after the retry was scheduled an hour out): the worker reconnects in a loop", n, n-before)
	}
}
