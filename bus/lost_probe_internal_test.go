package bus

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// lostProbe serves tk, which has a tool named probe, on a worker that
// stays announced but takes no call of probe once a client made with
// opts has seen it listed: its subscriptions are gone, as a lost
// worker's. The tests then put a subscriber of their own in its place.
func lostProbe(t *testing.T, s *server.Server, tk *toolkit.Toolkit, opts *ClientOptions) (*Worker, *Client) {
	t.Helper()
	w := serveKV(t, s, tk, nil)
	c, err := NewClient(natstest.Conn(t, s), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	natstest.WaitFor(t, "the fleet to list probe", func() bool {
		f, err := c.Fleet(t.Context())
		if err != nil {
			return false
		}
		_, ok := f.Tool("probe")
		return ok
	})
	w.mu.Lock()
	for _, sub := range w.subs["probe"] {
		if sub != nil {
			sub.Unsubscribe()
		}
	}
	w.mu.Unlock()
	return w, c
}
