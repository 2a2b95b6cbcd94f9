package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A worker decodes a request with its strings sharing the message's
// payload, and the session outlives the call where it is remembered:
// the sessions the worker holds (and its writes of their pins), by
// their keys, which for a plain session name are the name itself, and
// a session-bound tool's own state, kept by session. Each session
// remembered kept its latest call's whole request, input and all (here
// 40 of 512 KiB), up to the 100,000 sessions a worker remembers holding.
// What is kept of a session now is its name.
func TestSessionPinsDoNotKeepRequests(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}
	var mu sync.Mutex
	seen := map[string]int{} // a session-bound tool's state, by session
	mustAdd(t, tk, toolkit.Raw("put", "Counts a session's calls; keeps no value.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		mu.Lock()
		seen[call.Session]++
		mu.Unlock()
		return w.Write(toolkit.Text("kept"))
	}), toolkit.SessionBound())
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &bus.WorkerOptions{Instance: "w1", Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc)}})
	c := newClient(t, natstest.Connect(t, s), nil)
	const n, pad = 40, 512 << 10
	value := strings.Repeat("v", pad)
	var before uint64
	for i := range n {
		if i == 8 {
			before = heapInUse()
		}
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: fmt.Sprint("s", i), Input: map[string]any{"value": value[:pad-i]}})
		if r.Text() != "kept" {
			t.Fatalf("put: %+v", r)
		}
	}
	if grew := int64(heapInUse()) - int64(before); grew > 4<<20 {
		t.Errorf("%d calls of new sessions after the 8th kept %d KiB; each request was %d KiB, its session's name a few bytes", n-8, grew>>10, pad>>10)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("the tool saw %d sessions, want %d", len(seen), n)
	}
}
