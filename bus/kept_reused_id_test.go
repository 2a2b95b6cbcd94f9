package bus_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKeptResultOfAReusedID: a call whose final was kept by its second
// attempt (its first went to a worker that never answered), then a new
// call under the same id: the kept final is the new call's.
func TestKeptResultOfAReusedID(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("lookup", "Look it up.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}), toolkit.ReadOnly())
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, nc)}})
	taken := hole(t, natstest.Connect(t, s), "lookup", nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat})
	for i := 0; ; i++ { // the queue group picks at random: until the hole took one
		id := fmt.Sprint("k", i)
		r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "lookup", KeepResult: true, Input: map[string]any{"text": "first"}})
		select {
		case <-taken:
		default:
			if i < 100 {
				continue
			}
			t.Fatal("the silent worker never got a call")
		}
		if r.Text() != "first" {
			t.Fatalf("the call: %+v", r)
		}
		// The hole is gone. The cancel of the lost attempt, heard by the
		// worker as one for a call it does not know, ends the next call
		// under the id (its tombstone): one that keeps nothing takes it.
		for j := 0; c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "lookup", Input: map[string]any{"text": "x"}}).Code == toolkit.CodeInterrupted; j++ {
			if j > 2 {
				t.Fatal("the id's tombstone stays")
			}
		}
		// The same id again is a new call.
		r = c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "lookup", KeepResult: true, Input: map[string]any{"text": "second"}})
		if r.Text() != "second" {
			t.Fatalf("the call sent again: %+v", r)
		}
		if r := c.Result(ctxT(t), id); r.Text() != "second" {
			t.Fatalf("kept result of the call sent again under id %s: %s %q", id, r.Code, r.Text())
		}
		return
	}
}
