package bus_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestMaxInFlightBounded: a MaxInFlight past bus.MaxMaxInFlight is
// refused by Serve, saying so. It was taken: for one near math.MaxInt
// the readers' own bound (MaxInFlight plus the overload readers)
// wrapped to a negative number, so no reader was added past the first
// however many calls waited.
func TestMaxInFlightBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}))
	for _, n := range []int{math.MaxInt, bus.MaxMaxInFlight + 1} {
		w, err := bus.Serve(nc, tk, &bus.WorkerOptions{MaxInFlight: n})
		if err == nil {
			c := newClient(t, natstest.Connect(t, s), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r := c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}})
			cancel()
			w.Stop(context.Background())
			t.Fatalf("Serve took MaxInFlight %d (a call then ended %s %q)", n, r.State, r.Text())
		}
		if !strings.Contains(err.Error(), "MaxInFlight") {
			t.Errorf("Serve with MaxInFlight %d: %v, want an error naming MaxInFlight", n, err)
		}
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{MaxInFlight: bus.MaxMaxInFlight})
	if err != nil {
		t.Fatalf("Serve with MaxInFlight = MaxMaxInFlight: %v", err)
	}
	w.Stop(context.Background())
}
