package bus_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestHugeRetryAfterIsNotRetried: a worker answering overloaded with a
// retry_after_ms far past the client's own wait (here about 317 years,
// whose nanoseconds overflow a time.Duration) ends the call overloaded;
// the call is not sent again at once.
func TestHugeRetryAfterIsNotRetried(t *testing.T) {
	s := natstest.Embedded(t, false)
	// The fleet announces the tool read-only; the only one taking its
	// calls answers every one overloaded, "retry in 10^13 ms".
	calls := answeringReadOnly(t, s, "busy", func(id string) *toolkit.Response {
		r := toolkit.Final(id, toolkit.CodeOverloaded, "OverloadedError: busy.")
		r.Metadata = map[string]any{wire.MetaRetryAfterMS: uint64(10_000_000_000_000)}
		return r
	})
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.Fleet(ctxT(t)); err != nil { // the fleet view knows busy is read-only
		t.Fatal(err)
	}
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "busy"})
	if r.Code != toolkit.CodeOverloaded || calls.Load() != 1 || r.Metadata[wire.MetaAttempts] != nil {
		t.Fatalf("final %s %q %v after %d sends; want overloaded after one", r.Code, r.Text(), r.Metadata, calls.Load())
	}
}

// TestPanicInLoopBodyCancelsTheCall: a caller whose loop body panics
// (and recovers further up) stops the iteration as a break does: the
// call is cancelled on its worker, and the client goes on calling.
func TestPanicInLoopBodyCancelsTheCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	stopped := make(chan error, 1)
	mustAdd(t, tk, toolkit.Stream("wait", "Writes, then waits for its ctx.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text("first")); err != nil {
			return err
		}
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	}))
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)

	func() {
		defer func() {
			if v := recover(); v != "caller's bug" {
				t.Fatalf("recovered %v", v)
			}
		}()
		for ev := range c.Call(context.Background(), toolkit.ToolCall{ID: "panics-1", Name: "wait"}) {
			if ev.Chunk != nil {
				panic("caller's bug")
			}
		}
	}()
	select {
	case cause := <-stopped:
		if !errors.Is(cause, toolkit.ErrCallerCancelled) {
			t.Fatalf("the tool's ctx ended with %v, want the caller's cancel", cause)
		}
	case <-time.After(guard):
		t.Fatal("the tool ran on after its caller's loop body panicked")
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "still"}}); r.Text() != "still" {
		t.Fatalf("a call after the panic: %s %q", r.Code, r.Text())
	}
}

// TestAskerEndsWithItsCall: the caller's Asker answering a tool's
// request runs on a goroutine of the call; the call's end (here the tool
// gave up waiting and finished) ends the Asker's context, so a handler
// waiting for an answer that will never be read goes, even when the
// caller's own context never ends.
func TestAskerEndsWithItsCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	asking := make(chan struct{})
	mustAdd(t, tk, toolkit.Stream("impatient", "Asks, then gives up at once.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		actx, cancel := context.WithCancel(ctx)
		go func() { <-asking; cancel() }()
		if _, err := toolkit.Ask(actx, w, toolkit.MethodElicit, map[string]any{"message": "?"}); err == nil {
			return errors.New("answered")
		}
		return w.Write(toolkit.Text("gave up"))
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	askerDone := make(chan error, 1)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Asker: func(ctx context.Context, _ string, _ any) (any, error) {
		close(asking)
		<-ctx.Done() // a person who never answers
		askerDone <- ctx.Err()
		return nil, ctx.Err()
	}})
	if r := c.Invoke(context.Background(), toolkit.ToolCall{Name: "impatient"}); r.Text() != "gave up" {
		t.Fatalf("final %s %q", r.Code, r.Text())
	}
	select {
	case <-askerDone:
	case <-time.After(guard):
		t.Fatal("the Asker of a finished call still runs")
	}
}

// TestCallSeqRangedTwice: the sequence Call returns is a call each time
// it is ranged over. With no call id given, each gets an id of its own
// (the first filled one in for every later one: a durable call ranged
// again was refused as a duplicate), and ranging it on two goroutines at
// once is no data race.
func TestCallSeqRangedTwice(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	startDurableWorker(t, s, tk, bus.WorkerOptions{Instance: "w1"}, 0, false)
	c := newClient(t, natstest.Connect(t, s), nil)
	for _, durable := range []bool{false, true} {
		seq := c.Call(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: durable, Input: map[string]any{"text": "again"}})
		finals := make(chan *toolkit.Response, 4)
		var wg sync.WaitGroup
		for range 2 { // at once
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ev := range seq {
					if ev.Final != nil {
						finals <- ev.Final
					}
				}
			}()
		}
		wg.Wait()
		for ev := range seq { // and once more
			if ev.Final != nil {
				finals <- ev.Final
			}
		}
		close(finals)
		ids := map[string]bool{}
		for r := range finals {
			if r.Text() != "again" {
				t.Errorf("durable %v: final %s %q", durable, r.Code, r.Text())
			}
			ids[r.ID] = true
		}
		if len(ids) != 3 {
			t.Errorf("durable %v: three rangings had ids %v, want three", durable, ids)
		}
	}
}

// TestKeptResultMendsLostChunks: a core call sent with KeepResult whose
// connection broke mid-stream lost chunks on the way; its worker kept
// the whole final before sending it, so the client answers with that,
// as on the durable path, rather than with the output it happened to
// receive.
func TestKeptResultMendsLostChunks(t *testing.T) {
	s := natstest.Embedded(t, true)
	tk := toolkit.New(nil)
	three, release, wrote := threeTool()
	mustAdd(t, tk, three)
	wnc := natstest.Connect(t, s)
	serve(t, wnc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, wnc)}})
	px := natstest.ProxyTo(t, s)
	nc := px.Conn(t, nats.ReconnectWait(10*time.Millisecond))
	// Heartbeats far apart: the break is not taken for a lost worker.
	c := newClient(t, nc, &bus.ClientOptions{Heartbeat: 20 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{ID: "mended-1", Name: "three", KeepResult: true}) {
		if ev.Chunk != nil && ev.Chunk.Content[0].Text == "a" {
			loseFrames(t, px, nc, release, wrote)
		}
		final = ev.Final
	}
	if final == nil || final.Text() != "abc" || final.State != toolkit.StateSuccess || final.ID != "mended-1" {
		t.Fatalf("final %+v, want the kept abc", final)
	}
}
