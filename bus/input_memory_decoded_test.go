package bus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestBigCallsLeaveRoomForOthers: a call's input memory counts what its
// request holds once decoded, not the 16 times its body the decoding may
// take, and a call past MaxInputMemory is answered overloaded with its id
// rather than waiting in the subscription. Each call of 600 KB held 9.6 MB
// of the 16 MiB until its final, so a second one waited for the first to
// end, and every other caller's calls waited behind it and ended
// worker_lost: two slow calls of one caller stopped the worker.
func TestBigCallsLeaveRoomForOthers(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started := make(chan string, 4)
	release := make(chan struct{})
	if err := tk.Add(toolkit.Func("hold", "Holds until released.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (int, error) {
		started <- in.Text[:4]
		select {
		case <-release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return len(in.Text), nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w", MaxInputMemory: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	noisy, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { noisy.Close() })
	other, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	finals := make(chan *toolkit.Response, 3)
	for _, id := range []string{"big1", "big2", "big3"} {
		go func() {
			finals <- noisy.Invoke(t.Context(), toolkit.ToolCall{ID: id, Name: "hold", Input: map[string]any{"text": id + strings.Repeat("x", 600_000-len(id))}})
		}()
		select {
		case got := <-started:
			if got != id {
				t.Fatalf("%s started, want %s", got, id)
			}
		case r := <-finals:
			t.Fatalf("%s ended before it started: %s %s %q", id, r.State, r.Code, r.Text())
		case <-t.Context().Done():
			t.Fatalf("%s never started: the first big call's input memory held the worker", id)
		}
	}
	// A fourth would pass the 4 MiB: answered at once, with its id.
	r := noisy.Invoke(t.Context(), toolkit.ToolCall{ID: "big4", Name: "hold", Input: map[string]any{"text": strings.Repeat("x", 600_000)}})
	if r.Code != toolkit.CodeOverloaded || r.ID != "big4" || !strings.Contains(r.Text(), "retry after") {
		t.Fatalf("the call past the input memory: %s %s %s %q", r.ID, r.State, r.Code, r.Text())
	}
	ctx, cancel := context.WithTimeout(t.Context(), natstest.Guard)
	defer cancel()
	if r := other.Invoke(ctx, toolkit.ToolCall{ID: "small", Name: "echo", Input: map[string]any{"text": "hi"}}); r.State != toolkit.StateSuccess || r.Text() != "hi" {
		t.Fatalf("another caller's call: %s %s %q", r.State, r.Code, r.Text())
	}
	close(release)
	for range 3 {
		if r := <-finals; r.State != toolkit.StateSuccess || r.Text() != "600000" {
			t.Fatalf("big call: %s %s %q", r.State, r.Code, r.Text())
		}
	}
}
