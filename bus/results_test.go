package bus_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKeptResult: a call sent to keep its result can be fetched by id by
// another client of the same identity, whole even when it was streamed;
// another identity, an unknown id and a call not kept get not_found.
func TestKeptResult(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("count", "Count to three.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for i := 1; i <= 3; i++ {
			if err := w.Write(toolkit.Text(fmt.Sprint(i))); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond) // past the flush delay: streamed
		}
		return nil
	}))
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &bus.WorkerOptions{Instance: "keeper", Results: &bus.ResultsOptions{JetStream: natstest.JS(t, nc)}})
	alice := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Identity: "alice"})
	if r := alice.Invoke(ctxT(t), toolkit.ToolCall{ID: "r1", Name: "count", KeepResult: true}); r.Text() != "123" {
		t.Fatalf("the call: %+v", r)
	}
	alice.Invoke(ctxT(t), toolkit.ToolCall{ID: "r2", Name: "count"})

	later := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Identity: "alice"})
	if r := later.Result(ctxT(t), "r1"); r.ID != "r1" || r.Text() != "123" || r.State != toolkit.StateSuccess || r.Metadata[wire.MetaWorker] != "keeper" {
		t.Fatalf("kept result: %+v", r)
	}
	bob := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Identity: "bob"})
	for who, r := range map[string]*toolkit.Response{
		"bob":             bob.Result(ctxT(t), "r1"),
		"an unknown id":   later.Result(ctxT(t), "nope"),
		"a call not kept": later.Result(ctxT(t), "r2"),
	} {
		if r.Code != toolkit.CodeNotFound {
			t.Errorf("%s: %+v", who, r)
		}
	}
}

// TestKeptResultReadAtOnce: a caller that has its final reads it back
// kept at once, on the durable path too, where the worker does not wait
// for the bucket before it answers: many callers, each reading right
// after its final, find every result.
func TestKeptResultReadAtOnce(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "w1"}, 0)
	c := newClient(t, natstest.Connect(t, s), nil)
	const callers, calls = 16, 40
	missed := make(chan string, callers*calls)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for j := range calls {
				id := fmt.Sprintf("at-once-%d-%d", i, j)
				if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "echo", Input: map[string]any{"text": id}, Durable: true}); r.Text() != id {
					t.Errorf("call %s: %s %q", id, r.Code, r.Text())
					return
				}
				if kept := c.Result(ctxT(t), id); kept.Text() != id {
					missed <- id + ": " + string(kept.Code)
				}
			}
		})
	}
	wg.Wait()
	close(missed)
	var all []string
	for m := range missed {
		all = append(all, m)
	}
	if len(all) > 0 {
		t.Fatalf("%d of %d results not found right after their final, e.g. %s", len(all), callers*calls, all[0])
	}
}

// A kept call the client sent again after its worker was lost ran as its
// second attempt ("<id>-r2") and was kept under that id: Result(id) said
// not_found although the call had succeeded. A retry's result is kept
// under the id its caller gave.
func TestKeptResultOfARetry(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("lookup", "Look it up.", func(ctx context.Context, in struct{}) (string, error) { return "found", nil }), toolkit.ReadOnly())
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, nc)}})
	// A worker that takes a call and never answers, beside the real one.
	taken := hole(t, natstest.Connect(t, s), "lookup", nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat})
	for i := 0; ; i++ { // the queue group picks at random: until the hole took one
		id := fmt.Sprint("k", i)
		r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "lookup", KeepResult: true})
		select {
		case <-taken:
		default:
			if i < 100 {
				continue
			}
			t.Fatal("the silent worker never got a call")
		}
		// Sent again at least once: more on a loaded machine, where the
		// real worker's answer can come after a stall timeout of 60 ms.
		if n, _ := strconv.Atoi(fmt.Sprint(r.Metadata[wire.MetaAttempts])); r.ID != id || r.Text() != "found" || n < 2 {
			t.Fatalf("the call: %+v", r)
		}
		if r := c.Result(ctxT(t), id); r.ID != id || r.Text() != "found" || r.State != toolkit.StateSuccess {
			t.Fatalf("kept result: %+v", r)
		}
		return
	}
}
