package bus

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestBigCallsLeaveRoomForOthers: a call's input memory counts what its
// request holds once decoded, not the 16 times its body the decoding may
// take, and a request waiting for input memory does not hold up the calls
// behind it. Each call of 600 KB held 9.6 MB of the 16 MiB until its
// final, so a second one waited for the first to end, on the goroutine
// that receives calls: every other caller's calls waited behind it and
// ended worker_lost, two slow calls of one caller stopped the worker.
func TestBigCallsLeaveRoomForOthers(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started := make(chan string, 8)
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
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w"})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the stop, which waits for the calls
	// The noisy caller waits for its calls as long as the test may.
	noisy, err := NewClient(natstest.Connect(t, s), &ClientOptions{StallTimeout: natstest.Guard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { noisy.Close() })
	other, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	call := func(id string, size int) *toolkit.Response {
		return noisy.Invoke(t.Context(), toolkit.ToolCall{ID: id, Name: "hold", Input: map[string]any{"text": id + strings.Repeat("x", size-len(id))}})
	}
	finals := make(chan *toolkit.Response, 4)
	// Three calls of 600 KB run at once: each holds about 1.2 MB.
	for _, id := range []string{"big1", "big2", "big3"} {
		go func() { finals <- call(id, 600_000) }()
		select {
		case got := <-started:
			if got != id {
				t.Fatalf("%s started, want %s", got, id)
			}
		case r := <-finals:
			t.Fatalf("%s ended before it started: %s %s %q", id, r.State, r.Code, r.Text())
		case <-time.After(natstest.Guard):
			t.Fatalf("%s never started: the calls before it held the input memory", id)
		}
	}
	// One of 1 MB may take 16 MB decoding, which is not left: it waits,
	// and the calls behind it are taken meanwhile.
	go func() { finals <- call("big4", 1_000_000) }()
	natstest.WaitFor(t, "the call of 1 MB to be waiting", func() bool { return w.memWaiting.Load() > 0 })
	ctx, cancel := context.WithTimeout(t.Context(), natstest.Guard)
	defer cancel()
	if r := other.Invoke(ctx, toolkit.ToolCall{ID: "small", Name: "echo", Input: map[string]any{"text": "hi"}}); r.State != toolkit.StateSuccess || r.Text() != "hi" {
		t.Fatalf("another caller's call behind the waiting one: %s %s %q", r.State, r.Code, r.Text())
	}
	free()
	for range 4 {
		if r := <-finals; r.State != toolkit.StateSuccess || (r.Text() != "600000" && r.Text() != "1000000") {
			t.Fatalf("big call: %s %s %q", r.State, r.Code, r.Text())
		}
	}
}

// TestCallWaitingForInputMemoryHeartbeats: a call that waits for input
// memory hears heartbeats, numbered as its frames, which follow them.
// It heard nothing, so its caller ended it worker_lost after its stall
// timeout while the worker only waited for room, and ran it later for
// nobody.
func TestCallWaitingForInputMemoryHeartbeats(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started := make(chan string, 2)
	release := make(chan struct{})
	if err := tk.Add(toolkit.Func("hold", "Holds until released.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (int, error) {
		started <- in.Text[:5]
		select {
		case <-release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return len(in.Text), nil
	})); err != nil {
		t.Fatal(err)
	}
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w", MaxInputMemory: 4 << 20})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free)
	var logs natstest.Buffer
	const heartbeat = 250 * time.Millisecond // a stall timeout of 750 ms
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{Heartbeat: heartbeat, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	call := func(id string) *toolkit.Response {
		return c.Invoke(t.Context(), toolkit.ToolCall{ID: id, Name: "hold", Input: map[string]any{"text": id + strings.Repeat("x", 1_000_000-len(id))}})
	}
	finals := make(chan *toolkit.Response, 2)
	// The first call of 1 MB holds about 2 MB of the 4 MiB; the second
	// may take them all decoding: it waits.
	go func() { finals <- call("first") }()
	select {
	case <-started:
	case r := <-finals:
		t.Fatalf("the first call ended before it started: %s %s %q", r.State, r.Code, r.Text())
	case <-time.After(natstest.Guard):
		t.Fatal("the first call never started")
	}
	go func() { finals <- call("secnd") }()
	natstest.WaitFor(t, "the second call to wait for input memory", func() bool { return w.memWaiting.Load() > 0 })
	select {
	case r := <-finals:
		t.Fatalf("a call waiting for input memory ended: %s %s %q", r.State, r.Code, r.Text())
	case <-time.After(6 * heartbeat): // two stall timeouts
	}
	free()
	for range 2 {
		if r := <-finals; r.State != toolkit.StateSuccess || r.Text() != "1000000" {
			t.Fatalf("call: %s %s %q", r.State, r.Code, r.Text())
		}
	}
	if strings.Contains(logs.String(), "frames lost") {
		t.Fatalf("the call's frames did not follow its heartbeats:\n%s", logs.String())
	}
}

// TestCallWaitingForInputMemoryTimeout: as a caller of the wire contract
// sees a call that waits for input memory: heartbeats numbered 1, 2, ...,
// and its final after them; its Toolbus-Timeout counts from when it came,
// so a call that waited past it ends timeout without running.
func TestCallWaitingForInputMemoryTimeout(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started, free := addHold(t, tk)
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w", MaxInputMemory: 4 << 20})
	first := holdHalf(t, s, started)

	h := nats.Header{wire.HeaderHeartbeat: {"50"}, wire.HeaderTimeout: {"200"}}
	next := callWaiting(t, s, "hold", h)
	natstest.WaitFor(t, "the call to wait for input memory", func() bool { return w.memWaiting.Load() > 0 })
	var seq uint64
	for seq < 5 { // its timeout passed meanwhile
		f := next()
		if f.Kind != wire.KindHeartbeat || f.ID != "waiting" || f.Seq != seq+1 {
			t.Fatalf("frame %d while waiting: %s id %q seq %d", seq+1, f.Kind, f.ID, f.Seq)
		}
		seq = f.Seq
	}
	free()
	for {
		f := next()
		if f.Seq != seq+1 {
			t.Fatalf("%s frame numbered %d after %d", f.Kind, f.Seq, seq)
		}
		seq = f.Seq
		if f.Kind == wire.KindFinal {
			if f.Final.Code != toolkit.CodeTimeout {
				t.Fatalf("the call that waited past its timeout: %s %s %q", f.Final.State, f.Final.Code, f.Final.Text())
			}
			break
		}
	}
	if r := <-first; r.State != toolkit.StateSuccess {
		t.Fatalf("first call: %s %s %q", r.State, r.Code, r.Text())
	}
	select {
	case <-started:
		t.Fatal("the call that waited past its timeout ran")
	default:
	}
}
