package bus

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
)

// memBudget is a counted amount of memory that goroutines take from and
// give back, waiting while it is short.
type memBudget struct {
	mu   sync.Mutex
	cond sync.Cond
	size int
	left int
}

func newMemBudget(size int) *memBudget {
	b := &memBudget{size: size, left: size}
	b.cond.L = &b.mu
	return b
}

// acquire takes n (at most the whole budget, so that any request can be
// taken alone), waiting until that much is left, and returns what it took.
func (b *memBudget) acquire(n int) int {
	n = min(n, b.size)
	b.mu.Lock()
	for b.left < n {
		b.cond.Wait()
	}
	b.left -= n
	b.mu.Unlock()
	return n
}

// tryAcquire is acquire without the wait: false, taking nothing, when
// that much is not left now.
func (b *memBudget) tryAcquire(n int) (int, bool) {
	n = min(n, b.size)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left < n {
		return 0, false
	}
	b.left -= n
	return n, true
}

// release gives back what acquire took.
func (b *memBudget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// waitForInput takes the input memory (need) of a call that came when too
// little was left, waiting until calls that end give it back. Meanwhile
// its caller hears a heartbeat every interval it asked for, numbered as
// the call's frames, which follow them (in.beats): a call that waits for
// room is not taken for lost. A request that cannot be answered yet (no
// readable call id, a reply subject it may not use, a malformed header)
// waits silently, to be answered or dropped once decoded.
func (w *Worker) waitForInput(in *incoming, need int) int {
	w.memWaiting.Add(1)
	defer w.memWaiting.Add(-1)
	in.received = time.Now()
	c := wire.CodecOf(in.header)
	hb, _, _, err := w.parseHeaders(in.header)
	id := wire.RequestID(c, in.data)
	if err != nil || !wire.ValidCallID(id) || in.reply == "" || !wire.ReplyAllowed(in.reply, in.identity) {
		return w.inputs.acquire(need)
	}
	done := make(chan struct{})
	beats := make(chan uint64)
	go func() {
		seq, n := seqAfter(in.header), uint64(0)
		t := time.NewTicker(hb)
		defer t.Stop()
		for {
			select {
			case <-done:
				beats <- n
				return
			case <-t.C:
			}
			data, err := c.Marshal(&wire.Frame{Kind: wire.KindHeartbeat, ID: id, Seq: seq + n + 1})
			if err == nil && w.publish(in.reply, c, wire.KindHeartbeat, data) == nil {
				n++
			}
		}
	}()
	mem := w.inputs.acquire(need)
	close(done)
	in.beats = <-beats
	return mem
}

// inputNeed is the input memory a request m takes before it is decoded:
// 16 times its body (the most a body may decode to) and its headers.
func inputNeed(m *nats.Msg) int { return 16*len(m.Data) + heldHeaders(m.Header) }

// heldHeaders is about how much memory a request's headers hold while its
// call runs: the header block as received (its body shares that
// allocation) and its decoded keys and values, which a caller may make as
// large as its body.
func heldHeaders(h nats.Header) int {
	if len(h) == 0 {
		return 0
	}
	return 2 * headerSize(h)
}

// heldInput is about how much memory a decoded request holds while its
// call runs: its body (kept to pass the call on, and shared by decoded
// msgpack strings), its headers (heldHeaders) and its decoded input, each
// string counted again as if copied. A raw_input is decoded when the call
// runs: it counts the most it may decode to (wire.Budget).
func heldInput(data []byte, h nats.Header, req *wire.Request) int {
	n := len(data) + heldHeaders(h) + len(req.Session) + 16 + heldValue(req.Input)
	if req.RawInput != "" {
		n += wire.Budget(len(req.RawInput))
	}
	return n
}

// heldValue is about how many bytes a decoded value holds: its bytes and
// what Go keeps for each node (an interface's box, a map's entry and
// room to grow, a slice's header). A body nests at most 64 deep
// (wire.MaxDepth), and each node took at least a byte of it, so the walk
// is bounded by the body.
func heldValue(v any) int {
	switch x := v.(type) {
	case string:
		return len(x) + 32
	case json.Number:
		return len(x) + 32
	case []byte:
		return len(x) + 40
	case []any:
		n := 40
		for _, e := range x {
			n += 16 + heldValue(e)
		}
		return n
	case map[string]any:
		n := 64
		for k, e := range x {
			n += len(k) + 64 + heldValue(e)
		}
		return n
	}
	return 32
}
