package bus

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
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
	wrote := make(chan struct{})
	if err := tk.Add(toolkit.Stream("burst", "n chunks.",
		func(ctx context.Context, in struct {
			N int `json:"n"`
		}, w toolkit.Writer) error {
			defer close(wrote)
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

	// A caller within its MaxPending meanwhile gets all of its output,
	// though the stalled calls hold about the bound: the calls shed are
	// theirs. It takes its first chunk, then nothing until its tool has
	// written all (a long preemption at worst), so its 640 KiB burst is
	// unread at once, under MaxPending, and less than any stalled call
	// that holds anything unread (one over MaxPending, 1 MiB).
	const n = 20
	var r *toolkit.Response
	paused := false
	for ev := range c.Call(ctx, toolkit.ToolCall{Name: "burst", Input: map[string]any{"n": n}}) {
		if ev.Chunk != nil && !paused {
			paused = true
			<-wrote
		}
		if ev.Final != nil {
			r = ev.Final
		}
	}
	if r == nil || r.State != toolkit.StateSuccess || len(r.Text()) != n*len(chunk) {
		t.Fatalf("a caller within its MaxPending: %+.300v", r)
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

// boxOf is the pending inbox of call id, nil when there is none.
func boxOf(c *Client, id string) *inbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.pending {
		if b.id == id {
			return b
		}
	}
	return nil
}

// queuedFrames is how many frames b holds that its caller has not taken.
func queuedFrames(b *inbox) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

// TestShedKeepsAnArrivedFinal: a call shed for MaxPendingTotal whose
// final had already arrived (its caller had not read that far) ended
// interrupted, "the call was cancelled", though its tool had finished:
// a caller of a tool that must not run twice took it for not done. Its
// unread chunks are dropped, but the final is kept, no cancel is sent,
// and the call ends with its real outcome, the chunks it lost counted.
func TestShedKeepsAnArrivedFinal(t *testing.T) {
	s := natstest.Embedded(t, false)
	// The frames are a worker's, published by hand: which frames sit in
	// which inbox when the bound is passed is then the test's to say.
	rnc := natstest.Connect(t, s)
	requests := make(chan *nats.Msg, 4)
	if _, err := rnc.ChanSubscribe(wire.CallSubject("*", ""), requests); err != nil {
		t.Fatal(err)
	}
	if err := rnc.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{MaxPending: 1 << 20, MaxPendingTotal: 64 << 10, StallTimeout: natstest.Guard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := natstest.Ctx(t)
	text := strings.Repeat("x", 1000)
	publish := func(reply string, f *wire.Frame) {
		t.Helper()
		data, err := wire.Msgpack.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := rnc.Publish(reply, data); err != nil {
			t.Fatal(err)
		}
	}
	chunk := func(id string, seq uint64) *wire.Frame {
		return &wire.Frame{Kind: wire.KindChunk, ID: id, Seq: seq, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: text}}}}
	}
	final := func(id string, seq uint64) *wire.Frame {
		return &wire.Frame{Kind: wire.KindFinal, ID: id, Seq: seq, Chunks: seq - 1, Final: &toolkit.Response{ID: id, State: toolkit.StateSuccess}}
	}
	release := make(chan struct{})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) })
	// start makes call id, whose caller takes its first chunk and then
	// nothing until released; it returns the call's reply subject.
	start := func(id string, finals chan<- *toolkit.Response) string {
		took := make(chan struct{})
		go func() {
			var last *toolkit.Response
			got := false
			for ev := range c.Call(ctx, toolkit.ToolCall{ID: id, Name: "charge"}) {
				if ev.Chunk != nil && !got {
					got = true
					close(took)
					<-release
				}
				if ev.Final != nil {
					last = ev.Final
				}
			}
			finals <- last
		}()
		var req *nats.Msg
		select {
		case req = <-requests:
		case <-ctx.Done():
			t.Fatal("no request came")
		}
		publish(req.Reply, chunk(id, 1))
		select {
		case <-took:
		case <-ctx.Done():
			t.Fatal("the first chunk was not taken")
		}
		return req.Reply
	}
	const n = 30 // chunks after the first: about 36 KiB unread
	doneFinal := make(chan *toolkit.Response, 1)
	done := start("done", doneFinal)
	for seq := uint64(2); seq <= n+1; seq++ {
		publish(done, chunk("done", seq))
	}
	publish(done, final("done", n+2)) // the tool finished
	natstest.WaitFor(t, "the finished call's frames to arrive", func() bool { return queuedFrames(boxOf(c, "done")) == n+1 })
	// Another stalled call passes the bound; the finished one holds the
	// most unread.
	otherFinal := make(chan *toolkit.Response, 1)
	other := start("other", otherFinal)
	for seq := uint64(2); seq <= n+1; seq++ {
		publish(other, chunk("other", seq))
	}
	natstest.WaitFor(t, "the other call's frames to arrive", func() bool { return queuedFrames(boxOf(c, "other")) == n })
	b := boxOf(c, "done")
	b.mu.Lock()
	over, frames := b.over, len(b.msgs)
	b.mu.Unlock()
	if frames != 1 || over != notOver {
		t.Errorf("the finished call shed: %d frames held, over %d; want its final alone, not over (no cancel sent)", frames, over)
	}
	if held, bound := heldBytes(c), c.opts.MaxPendingTotal; held > bound {
		t.Errorf("%d bytes held, over the bound of %d", held, bound)
	}
	publish(other, final("other", n+2))
	released.Do(func() { close(release) })
	r := <-doneFinal
	if r == nil || r.State != toolkit.StateSuccess || fmt.Sprint(r.Metadata[wire.MetaLostChunks]) != fmt.Sprint(n) {
		t.Fatalf("the finished call shed ended %+v; want success with lost_chunks %d", r, n)
	}
	if r := <-otherFinal; r == nil || r.State != toolkit.StateSuccess || r.Metadata[wire.MetaLostChunks] != nil {
		t.Errorf("the other call ended %+v; want success, nothing lost", r)
	}
}

// TestOverMaxPendingSaysItMayHaveRun: a call cancelled for MaxPending
// takes no frame after the one that made it over, its final included: a
// tool that finished meanwhile ended "the call was cancelled", which a
// caller of a tool that must not run twice takes for not done. The text
// says it may have taken effect.
func TestOverMaxPendingSaysItMayHaveRun(t *testing.T) {
	s := natstest.Embedded(t, false)
	rnc := natstest.Connect(t, s)
	requests := make(chan *nats.Msg, 1)
	if _, err := rnc.ChanSubscribe(wire.CallSubject("charge", ""), requests); err != nil {
		t.Fatal(err)
	}
	if err := rnc.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{MaxPending: 8 << 10, StallTimeout: natstest.Guard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := natstest.Ctx(t)
	text := strings.Repeat("x", 1000)
	publish := func(reply string, f *wire.Frame) {
		t.Helper()
		data, err := wire.Msgpack.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := rnc.Publish(reply, data); err != nil {
			t.Fatal(err)
		}
	}
	took, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) })
	finals := make(chan *toolkit.Response, 1)
	go func() {
		var last *toolkit.Response
		got := false
		for ev := range c.Call(ctx, toolkit.ToolCall{ID: "pay", Name: "charge"}) {
			if ev.Chunk != nil && !got {
				got = true
				close(took)
				<-release
			}
			if ev.Final != nil {
				last = ev.Final
			}
		}
		finals <- last
	}()
	req := <-requests
	const n = 12 // past MaxPending
	for seq := uint64(1); seq <= n; seq++ {
		publish(req.Reply, &wire.Frame{Kind: wire.KindChunk, ID: "pay", Seq: seq, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: text}}}})
		if seq == 1 {
			<-took
		}
	}
	publish(req.Reply, &wire.Frame{Kind: wire.KindFinal, ID: "pay", Seq: n + 1, Chunks: n, Final: &toolkit.Response{ID: "pay", State: toolkit.StateSuccess}})
	natstest.WaitFor(t, "the call to go over MaxPending", func() bool {
		b := boxOf(c, "pay")
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.over == overCall
	})
	// The final comes after the frame that made the call over (one
	// publisher: in order), so it is not taken, whenever it arrives.
	released.Do(func() { close(release) })
	r := <-finals
	if r == nil || r.Code != toolkit.CodeInterrupted || !strings.Contains(r.Text(), "SlowConsumerError") || !strings.Contains(r.Text(), "may have taken effect") {
		t.Fatalf("a call over MaxPending whose tool finished ended %+v; want interrupted, saying it may have taken effect", r)
	}
}

// TestEndsCall: shed keeps the frames that end a call, told by their
// first bytes when the Go worker encoded them, by decoding otherwise.
func TestEndsCall(t *testing.T) {
	final := &wire.Frame{Kind: wire.KindFinal, ID: "a", Seq: 2, Final: &toolkit.Response{ID: "a", State: toolkit.StateSuccess}}
	chunk := &wire.Frame{Kind: wire.KindChunk, ID: "a", Seq: 1, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "final"}}}}
	msg := func(c wire.Codec, f *wire.Frame) *nats.Msg {
		data, err := c.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		m := &nats.Msg{Subject: "x", Data: data}
		if c == wire.JSON {
			m.Header = c.Header()
		}
		return m
	}
	for _, tc := range []struct {
		name string
		m    *nats.Msg
		want bool
	}{
		{"msgpack final", msg(wire.Msgpack, final), true},
		{"msgpack chunk", msg(wire.Msgpack, chunk), false},
		{"json final", msg(wire.JSON, final), true},
		{"json chunk", msg(wire.JSON, chunk), false},
		{"no responders", &nats.Msg{Subject: "x", Header: nats.Header{"Status": {"503"}}}, true},
		{"garbage", &nats.Msg{Subject: "x", Data: []byte("\x85\xa4kin")}, false},
	} {
		if got := endsCall(tc.m); got != tc.want {
			t.Errorf("%s: endsCall %v, want %v", tc.name, got, tc.want)
		}
	}
}
