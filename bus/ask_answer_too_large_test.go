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

// An answer the client could not publish (an Asker's result over the
// server's max_payload) was only logged: the tool went on waiting for it,
// its heartbeats keeping the call alive, until the call's deadline, and
// for ever without one. The tool hears that the answer could not be sent,
// as it does when the answer cannot be encoded.
func TestAskAnswerTooLargeReachesTheTool(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, askTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	huge := strings.Repeat("x", int(nc.MaxPayload())+1)
	c := newClient(t, nc, &bus.ClientOptions{Asker: func(context.Context, string, any) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"name": huge}}, nil
	}})
	// The deadline only keeps a broken client from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	start := time.Now()
	r := c.Invoke(ctx, toolkit.ToolCall{Name: "greet"})
	if !strings.Contains(r.Text(), "no answer") || !strings.Contains(r.Text(), "could not be sent") {
		t.Fatalf("after %v: final %s %s: %.300q", time.Since(start).Round(time.Millisecond), r.State, r.Code, r.Text())
	}
}
