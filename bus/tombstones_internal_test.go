package bus

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTombstoneFloodSparesOtherCallers: a caller may publish cancels of
// its own identity's call ids at will (its role allows
// tools.cancel.<identity>.*). Before, maxTombstones of them pushed every
// other caller's tombstones out, so bob's cancel that overtook his call
// was forgotten and the call ran. Now one caller holds at most
// maxTombstonesPerCaller; its cancels past that are not kept.
func TestTombstoneFloodSparesOtherCallers(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "ran", nil })); err != nil {
		t.Fatal(err)
	}
	// The flood takes a while under the race detector, longer on a loaded
	// machine: bob's tombstone is kept an hour, so that only the flood can
	// push it out, not its 30 s lifetime passing meanwhile.
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{TombstoneTTL: time.Hour})

	nc := natstest.Connect(t, s)
	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("bob", "b1"), "")); err != nil {
		t.Fatal(err)
	}
	for i := range maxTombstones {
		if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("alice", "a"+strconv.Itoa(i)), "")); err != nil {
			t.Fatal(err)
		}
	}
	// carol's cancel comes after the flood on the same subscription: once
	// it is kept, the flood was handled.
	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("carol", "c1"), "")); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the cancels to be handled", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, ok := w.tombs[callKey("carol", "c1")]
		return ok
	})
	bob, err := NewClient(natstest.Connect(t, s), &ClientOptions{Identity: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bob.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r := bob.Invoke(ctx, toolkit.ToolCall{ID: "b1", Name: "echo"}); r.Code != toolkit.CodeInterrupted {
		t.Fatalf("bob's call cancelled before it came: %s %s %q, want interrupted without running", r.State, r.Code, r.Text())
	}
}
