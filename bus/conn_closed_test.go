package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A call in flight when its client's connection closed for good (closed
// by its owner, or the server gone past the reconnect attempts) waited
// out its whole stall timeout before it ended, though nothing could reach
// it any more. It ends at once, unavailable, saying the connection
// closed.
func TestConnectionClosedEndsCalls(t *testing.T) {
	s := natstest.Embedded(t, false)
	started, release := make(chan struct{}, 1), make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("hold", "Run until cancelled or released.", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return "", ctx.Err()
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	t.Cleanup(func() { close(release) }) // before the worker stops
	cnc := natstest.Connect(t, s)
	// A stall timeout longer than the test's guard: only the closing can
	// end the call in time.
	c := newClient(t, cnc, &bus.ClientOptions{StallTimeout: 10 * time.Minute})

	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold"}) }()
	select {
	case <-started:
	case <-time.After(guard):
		t.Fatal("the tool did not start")
	}
	cnc.Close()
	r := <-done
	if r.Code != toolkit.CodeUnavailable || !strings.Contains(r.Text(), "connection") {
		t.Errorf("final %s/%s %q, want unavailable naming the closed connection", r.State, r.Code, r.Text())
	}
	// A call after the close fails at once too.
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold"}); r.Code != toolkit.CodeUnavailable {
		t.Errorf("a call on the closed connection: %s/%s %q", r.State, r.Code, r.Text())
	}
}
