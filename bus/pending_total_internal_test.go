package bus

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// heldBytes is what the client's pending calls hold for their callers
// (inbox.pending, the batch being handed included), summed over them.
func heldBytes(c *Client) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, b := range c.pending {
		b.mu.Lock()
		n += b.pending
		b.mu.Unlock()
	}
	return n
}

// TestPendingBoundedAcrossCalls: MaxPending bounded what one stalled
// caller had queued, nothing what all of them had: eight callers that
// stopped taking their events while their tools streamed had eight times
// MaxPending held in the client. MaxPendingTotal bounds the sum; a caller
// that keeps up meanwhile is not the one cut off, and what the calls held
// is given back when they end.
func TestPendingBoundedAcrossCalls(t *testing.T) {
	s := natstest.Embedded(t, false)
	chunk := strings.Repeat("x", 32<<10)
	var stopped atomic.Int32
	flowing := make(chan struct{})
	var flow sync.Once
	open := func() { flow.Do(func() { close(flowing) }) }
	t.Cleanup(open)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Stream("flood", "A chunk, then chunks until cancelled.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			defer stopped.Add(1)
			if err := w.Write(toolkit.Text(chunk)); err != nil {
				return err
			}
			select {
			case <-flowing:
			case <-ctx.Done():
				return ctx.Err()
			}
			for ctx.Err() == nil {
				if err := w.Write(toolkit.Text(chunk)); err != nil {
					return err
				}
			}
			return ctx.Err()
		})); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Stream("burst", "n chunks.",
		func(ctx context.Context, in struct {
			N int `json:"n"`
		}, w toolkit.Writer) error {
			for range in.N {
				if err := w.Write(toolkit.Text(chunk)); err != nil {
					return err
				}
			}
			return nil
		})); err != nil {
		t.Fatal(err)
	}
	w, err := Serve(natstest.Connect(t, s), tk, &WorkerOptions{AnnounceInterval: -1, MaxInFlight: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	const perCall, total, calls = 1 << 20, 4 << 20, 8
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{MaxPending: perCall, MaxPendingTotal: total, StallTimeout: natstest.Guard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := natstest.Ctx(t)

	// Eight callers take their call's first chunk and then nothing until
	// released.
	release := make(chan struct{})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) })
	var first sync.WaitGroup
	first.Add(calls)
	finals := make(chan *toolkit.Response, calls)
	for range calls {
		go func() {
			var final *toolkit.Response
			got := false
			for ev := range c.Call(ctx, toolkit.ToolCall{Name: "flood"}) {
				if ev.Chunk != nil && !got {
					got = true
					first.Done()
					<-release
				}
				if ev.Final != nil {
					final = ev.Final
				}
			}
			if !got {
				first.Done()
			}
			finals <- final
		}()
	}
	first.Wait()
	open()
	// Every tool is cancelled once its call holds too much.
	natstest.WaitFor(t, "every flood cancelled", func() bool { return stopped.Load() == calls })
	if held := heldBytes(c); held > total {
		t.Errorf("%d stalled callers have %d bytes held for them, over the client's bound of %d (%d each)", calls, held, total, perCall)
	}
	if held, counted := heldBytes(c), c.queued.Load(); held != counted {
		t.Errorf("the calls hold %d bytes, the client counts %d", held, counted)
	}

	// A caller keeping up meanwhile gets all of its output.
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "burst", Input: map[string]any{"n": 256}}); r.State != toolkit.StateSuccess || len(r.Text()) != 256*len(chunk) {
		t.Fatalf("a caller keeping up: %s %s, %d bytes: %.200s", r.State, r.Code, len(r.Text()), r.Text())
	}

	released.Do(func() { close(release) })
	for range calls {
		r := <-finals
		if r == nil || r.Code != toolkit.CodeInterrupted || !strings.Contains(r.Text(), "SlowConsumerError") {
			t.Errorf("a stalled caller's final: %+v", r)
		}
	}
	if n := c.queued.Load(); n != 0 {
		t.Errorf("%d bytes still counted as queued after every call ended", n)
	}
}

// TestPendingTotalShedsTheLargest: past MaxPendingTotal the call holding
// the most unread is the one that ends, whichever call's frame came: its
// unread frames are dropped, and a call holding little goes on.
func TestPendingTotalShedsTheLargest(t *testing.T) {
	s := natstest.Embedded(t, false)
	data := make([]byte, 1000)
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cost := heldCost(&nats.Msg{Subject: c.prefix + "small", Data: data}) // "large" costs the same
	c.opts.MaxPending, c.opts.MaxPendingTotal = 100*cost, 30*cost
	boxes := map[string]*inbox{}
	c.mu.Lock()
	for _, token := range []string{"large", "small"} {
		b := &inbox{signal: make(chan struct{}, 1), id: token, first: token, limit: c.opts.MaxPending, total: &c.queued}
		c.pending[token], boxes[token] = b, b
	}
	c.mu.Unlock()
	send := func(token string, n int) {
		for range n {
			c.onMsg(&nats.Msg{Subject: c.prefix + token, Data: data})
		}
	}
	send("large", 20)
	send("small", 5)
	big, small := boxes["large"], boxes["small"]
	if big.over != notOver || small.over != notOver {
		t.Fatalf("over before the bound: big %d, small %d", big.over, small.over)
	}
	send("small", 10) // past 30 frames' worth: the big one holds the most
	if big.over != overTotal {
		t.Errorf("the call holding the most: over %d, want %d (overTotal)", big.over, overTotal)
	}
	if len(big.msgs) != 0 || big.pending != 0 {
		t.Errorf("the call shed still holds %d frames, %d bytes", len(big.msgs), big.pending)
	}
	if small.over != notOver || len(small.msgs) != 15 {
		t.Errorf("the small call: over %d, %d frames held, want 15", small.over, len(small.msgs))
	}
	if got, want := c.queued.Load(), small.pending; got != want {
		t.Errorf("the client counts %d bytes queued, the calls hold %d", got, want)
	}
	c.mu.Lock()
	delete(c.pending, "large")
	delete(c.pending, "small")
	c.mu.Unlock()
}
