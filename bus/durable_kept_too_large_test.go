package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableFinalTooLargeToKeep: a durable call whose final is larger
// than the server's max_payload reaches its caller (split into chunks),
// but cannot be kept whole (a KV value is one message). Writing it again
// every 100 ms for 30 s could never succeed, and the call, left
// unacknowledged, was delivered again: its tool ran again. The call is
// acknowledged at once and runs once; what is kept says that it ended and
// that its result was too large to keep.
func TestDurableFinalTooLargeToKeep(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ackWait time.Duration
		runFor  time.Duration // half its AckWait or longer: kept read-first
	}{{"quick", 5 * time.Second, 0}, {"long", 2 * time.Second, 1200 * time.Millisecond}} {
		t.Run(tt.name, func(t *testing.T) { finalTooLargeToKeep(t, tt.ackWait, tt.runFor) })
	}
}

func finalTooLargeToKeep(t *testing.T, ackWait, runFor time.Duration) {
	s := natstest.Embedded(t, false)
	big := strings.Repeat("x", 2<<20) // over the default max_payload, 1 MiB
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("big", "Answer 2 MiB.", func(context.Context, struct{}) (string, error) {
		runs.Add(1)
		time.Sleep(runFor)
		return big, nil
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	var logs natstest.Buffer
	keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "keeper", Logger: slog.New(slog.NewTextHandler(&logs, nil))}, ackWait)
	nc := natstest.Connect(t, s)
	c := newClient(t, nc, nil)
	// No deadline: a delivery again would run the tool, not answer timeout.
	if r := c.Invoke(t.Context(), toolkit.ToolCall{ID: "bigd1", Name: "big", Durable: true}); r.Text() != big {
		t.Fatalf("the call: %s %s, %d bytes", r.State, r.Code, len(r.Text()))
	}

	st, err := natstest.JS(t, nc).Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	acked := func() bool {
		info, err := st.Info(ctxT(t))
		return err == nil && info.State.Msgs == 0
	}
	// Acknowledged, or run again once left unacknowledged (after 30 s of
	// writes and the AckWait).
	for deadline := time.Now().Add(90 * time.Second); !acked() && runs.Load() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the call is neither acknowledged nor run again (runs: %d)", runs.Load())
		}
	}
	if n := runs.Load(); n != 1 || !acked() {
		t.Fatalf("the call ran %d times, acknowledged: %v", n, acked())
	}
	r := c.Result(ctxT(t), "bigd1")
	if r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "ResultTooLargeError") || !strings.Contains(r.Text(), "success") {
		t.Fatalf("kept: %s %s %.300q", r.State, r.Code, r.Text())
	}
	line := logs.String()
	for _, want := range []string{"call=bigd1", "max_payload"} {
		if !strings.Contains(line, want) {
			t.Errorf("the worker's line lacks %q:\n%s", want, line)
		}
	}
}
