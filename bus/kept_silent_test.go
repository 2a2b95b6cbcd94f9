package bus_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// chargeTool is a tool that must not run twice (neither read-only nor
// idempotent: the client never sends its calls again); it says it
// started on started (when not nil) and returns "charged" once release
// is closed (nil: at once).
func chargeTool(started chan<- struct{}, release <-chan struct{}) *toolkit.Tool {
	return toolkit.Func("charge", "Charges a card.", func(ctx context.Context, in struct{}) (string, error) {
		if started != nil {
			started <- struct{}{}
		}
		if release != nil {
			<-release
		}
		return "charged", nil
	})
}

// TestKeptFinalOfASilentCall: a core call kept with KeepResult whose
// final is lost while its client's link is down (the worker ran it and
// kept its final) falls silent. The kept final is the call's answer: it
// ended as charged, not worker_lost ("may or may not have taken effect")
// while Result, asked right after, knew it had.
func TestKeptFinalOfASilentCall(t *testing.T) {
	s := natstest.Embedded(t, true)
	started, release := make(chan struct{}, 1), make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, chargeTool(started, release))
	wnc := natstest.Connect(t, s)
	serve(t, wnc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, wnc)}})
	px := natstest.ProxyTo(t, s)
	nc := px.Conn(t)
	// A stall timeout far longer than the cut lasts: the call falls
	// silent once its link is back, as after a slow consumer's cut.
	c := newClient(t, nc, &bus.ClientOptions{Heartbeat: bus.MinHeartbeat, StallTimeout: 5 * time.Second})
	reader := newClient(t, natstest.Connect(t, s), nil)
	ctx := ctxT(t)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "pay1", Name: "charge", KeepResult: true}) }()
	<-started
	px.Cut()
	natstest.WaitFor(t, "the client to notice the break", func() bool { return !nc.IsConnected() })
	close(release)
	natstest.WaitFor(t, "the final to be kept", func() bool { return reader.Result(ctx, "pay1").Text() == "charged" })
	px.Restore()
	natstest.WaitFor(t, "the client to reconnect", nc.IsConnected)
	r := <-done
	if r.State != toolkit.StateSuccess || r.Text() != "charged" || r.ID != "pay1" {
		t.Fatalf("the call whose final was lost and kept ended %s %q (id %q); want its kept success", r.Code, r.Text(), r.ID)
	}
}

// TestSilentCallOfAReusedIDIgnoresAnEarlierKeptFinal: a call under an id
// whose earlier call's final is kept (for up to an hour) falls silent
// with nothing kept for it: it ends worker_lost, not with the earlier
// call's final.
func TestSilentCallOfAReusedIDIgnoresAnEarlierKeptFinal(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, chargeTool(nil, nil))
	wnc := natstest.Connect(t, s)
	w := serve(t, wnc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, wnc)}})
	// The earlier call answers: its client's stall timeout is long, so a
	// busy machine holding its worker off the CPU does not end it lost.
	// The silent call's, short, only decides how soon it ends.
	earlier := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat, StallTimeout: guard})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat, StallTimeout: 300 * time.Millisecond, MaxAttempts: 1})
	ctx := ctxT(t)
	if r := earlier.Invoke(ctx, toolkit.ToolCall{ID: "pay2", Name: "charge", KeepResult: true}); r.Text() != "charged" {
		t.Fatalf("the earlier call: %s %q", r.Code, r.Text())
	}
	if r := c.Result(ctx, "pay2"); r.Text() != "charged" {
		t.Fatalf("the earlier call's final is not kept: %s %q", r.Code, r.Text())
	}
	w.Stop(ctx)
	// The only taker of the next call never answers it.
	taken := hole(t, natstest.Connect(t, s), "charge", nil)
	r := c.Invoke(ctx, toolkit.ToolCall{ID: "pay2", Name: "charge", KeepResult: true})
	select {
	case <-taken:
	default:
		t.Fatal("the silent taker never got the call")
	}
	if r.Code != toolkit.CodeWorkerLost {
		t.Fatalf("the silent call under a reused id ended %s %q; want worker_lost, not the earlier call's kept final", r.Code, r.Text())
	}
}

// TestMendingLostChunksIgnoresAnEarlierKeptFinal: a KeepResult call under
// a reused id whose chunks were lost on the way (its link broke
// mid-stream) and whose own final was not kept (its worker keeps
// nothing) is not mended with the final an earlier call under the id
// kept: it ends with the output it received, its lost chunks counted.
func TestMendingLostChunksIgnoresAnEarlierKeptFinal(t *testing.T) {
	s := natstest.Embedded(t, true)
	keeper := toolkit.New(nil)
	mustAdd(t, keeper, echoTool())
	knc := natstest.Connect(t, s)
	kw := serve(t, knc, keeper, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, knc)}})
	px := natstest.ProxyTo(t, s)
	nc := px.Conn(t, nats.ReconnectWait(10*time.Millisecond))
	// Heartbeats far apart: the break is not taken for a lost worker.
	c := newClient(t, nc, &bus.ClientOptions{Heartbeat: 20 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	ctx := ctxT(t)
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "mend-2", Name: "echo", KeepResult: true, Input: map[string]any{"text": "earlier"}}); r.Text() != "earlier" {
		t.Fatalf("the earlier call: %s %q", r.Code, r.Text())
	}
	kw.Stop(ctx)
	tk := toolkit.New(nil)
	three, release, wrote := threeTool()
	mustAdd(t, tk, three)
	serve(t, natstest.Connect(t, s), tk, nil) // keeps nothing
	var final *toolkit.Response
	for ev := range c.Call(ctx, toolkit.ToolCall{ID: "mend-2", Name: "three", KeepResult: true}) {
		if ev.Chunk != nil && ev.Chunk.Content[0].Text == "a" {
			loseFrames(t, px, nc, release, wrote)
		}
		final = ev.Final
	}
	if final == nil || final.Text() != "ac" || final.Metadata[wire.MetaLostChunks] == nil {
		t.Fatalf("final %+v, want the output received (ac) with its lost chunk counted, not the earlier call's kept final", final)
	}
}
