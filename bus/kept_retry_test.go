package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKeptResultOfRetriedCallStays: a call that keeps its result and is
// sent again after its first attempt went silent ends with the second
// attempt's final, kept under the id its caller gave. The first
// attempt, cancelled as lost but still running, ends later: what it
// answers nobody reads, and Result goes on returning what Invoke
// returned.
func TestKeptResultOfRetriedCallStays(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	release := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("lookup", "Look it up.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if !strings.HasSuffix(call.ID, "-r2") {
			// The first attempt: silent past the caller's stall timeout,
			// and slow to stop when cancelled.
			<-ctx.Done()
			<-release
			return ctx.Err()
		}
		return w.Write(toolkit.Text("found"))
	}), toolkit.ReadOnly())
	w, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, wnc)}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(release)
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			w.Stop(ctx)
		}
	}
	t.Cleanup(stop)
	// Heartbeats every minute, a stall after 2s: the first attempt looks
	// lost while its tool still runs; the second answers at once, in far
	// less than 2s even on a busy machine.
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MaxHeartbeat, StallTimeout: 2 * time.Second, CancelGrace: time.Minute})
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "kept-1", Name: "lookup", KeepResult: true})
	if r.Text() != "found" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
		t.Fatalf("final %s %q %v, want found after two attempts", r.Code, r.Text(), r.Metadata)
	}
	if k := c.Result(ctxT(t), "kept-1"); k.Text() != "found" {
		t.Fatalf("kept %s %q, want found", k.Code, k.Text())
	}
	// The first attempt ends (released, or abandoned by its worker) and
	// the worker stops after it.
	stop()
	if err := wnc.Flush(); err != nil {
		t.Fatal(err)
	}
	if k := c.Result(ctxT(t), "kept-1"); k.Code != "" || k.Text() != "found" {
		t.Fatalf("after the lost attempt ended, kept %s/%s %q; Invoke returned found", k.State, k.Code, k.Text())
	}
}
