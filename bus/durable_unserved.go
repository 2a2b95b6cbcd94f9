package bus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

// A durable call of a tool no worker has served (a typo, a tool never
// deployed) would wait in the calls stream until its deadline, and
// without one for good: nothing pulls it. Every worker serving a tool on
// the durable path makes the tool's consumer, which stays while the
// workers restart, so a missing consumer means no worker has served the
// tool. The client then reads the fleet's announcements: a tool nobody
// announces is answered not_found, as on the core path; one announced by
// a worker with the durable path (wire.MetaDurable: its consumer is on
// its way) is queued; one announced only by workers without it is
// answered unavailable. Nothing is stored for either answer.

// consumersSeen are the tools whose consumer of the calls stream a client
// has seen: their durable calls are queued without looking again, so a
// served tool's calls cost no JetStream request of their own. A missing
// consumer is not remembered: a worker may serve the tool by the next
// call.
type consumersSeen struct {
	tools sync.Map // tool → struct{}; at most maxConsumersSeen
	n     atomic.Int32
	// failed is when a lookup last went unanswered (unix ns): for
	// lookupPause after one, calls are queued without a lookup, so a
	// lookup the server refuses (roles written before it) or a JetStream
	// without a leader costs one call lookupWait, not every call.
	failed atomic.Int64
}

// maxConsumersSeen bounds the tools a client remembers to have a
// consumer: past it the memory is cleared (their next calls look again).
// Workers may make consumers of any name.
const maxConsumersSeen = 4096

// add remembers that tool has a consumer.
func (s *consumersSeen) add(tool string) {
	if _, loaded := s.tools.LoadOrStore(tool, struct{}{}); !loaded && s.n.Add(1) > maxConsumersSeen {
		s.tools.Clear()
		s.n.Store(0)
	}
}

// lookupWait bounds the lookup of a tool's consumer.
const lookupWait = 2 * time.Second

// lookupPause is how long after an unanswered lookup calls are queued
// without one.
const lookupPause = time.Minute

// unserved answers a durable call of a tool no worker has served:
// not_found when the calls stream has no consumer of the tool and no
// worker announces it, unavailable when only workers without the durable
// path do; nil when the call is to be queued, also whenever the lookup
// cannot tell (no stream, no JetStream: queueing says so).
func (c *Client) unserved(ctx context.Context, js jetstream.JetStream, call toolkit.ToolCall) *toolkit.Response {
	if _, ok := c.consumers.tools.Load(call.Name); ok {
		return nil
	}
	if time.Since(time.Unix(0, c.consumers.failed.Load())) < lookupPause {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, lookupWait)
	defer cancel()
	_, err := js.Consumer(lctx, wire.StreamCalls, call.Name)
	switch {
	case err == nil:
		c.consumers.add(call.Name)
		return nil
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)):
		c.consumers.failed.Store(time.Now().UnixNano())
		c.log.Debug("bus: the lookup of a durable tool's consumer went unanswered; queueing durable calls without one for "+lookupPause.String(), "tool", call.Name, "err", err)
		return nil
	default:
		return nil
	}
	// No consumer: the fleet's announcements tell a tool no worker
	// serves from one whose durable worker has not made its consumer yet
	// (the tool was just added) and from one served on the core path
	// only. A fleet view that cannot be had leaves tools.list's answer.
	fctx, cancel := context.WithTimeout(ctx, lookupWait)
	defer cancel()
	f, err := c.Fleet(fctx)
	if err != nil {
		if reply, err := c.List(fctx, ""); err == nil && slices.Contains(reply.Tools, call.Name) {
			return nil
		}
		return notFound(call)
	}
	switch durable, served := durableServers(f, call.Name); {
	case durable:
		return nil // its consumer is on its way
	case served:
		return coreOnly(call)
	}
	return notFound(call)
}

// durableServers reports whether a live worker of the fleet serves tool
// on the durable path, and whether any serves it.
func durableServers(f *discovery.Fleet, tool string) (durable, served bool) {
	for _, in := range f.Instances() {
		if slices.Contains(in.Tools, tool) {
			if d, _ := in.Meta[wire.MetaDurable].(bool); d {
				return true, true
			}
			served = true
		}
	}
	return false, served
}

// coreOnly is the final of a durable call of a tool that only workers
// without the durable path serve.
func coreOnly(call toolkit.ToolCall) *toolkit.Response {
	return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf(
		"ToolUnavailableError: no worker serving '%s' takes durable calls (they run without the durable path); send the call without durable, or serve the tool on a worker with the durable path.", call.Name))
}

// untaken answers a durable call that has waited in the queue a stall
// timeout without a worker taking it, when none could: its tool's
// consumer is there (a durable worker served it once) but the live
// workers serving it have no durable path. nil while it may still be
// taken: a durable worker serves the tool (busy), or none serves it at
// all (its workers are down: it runs when one is back), or the fleet
// cannot be seen.
func (c *Client) untaken(ctx context.Context, call toolkit.ToolCall) *toolkit.Response {
	fctx, cancel := context.WithTimeout(ctx, lookupWait)
	defer cancel()
	f, err := c.Fleet(fctx)
	if err != nil {
		return nil
	}
	if durable, served := durableServers(f, call.Name); served && !durable {
		return coreOnly(call)
	}
	return nil
}

// settled reports whether the calls stream's consumer of tool is done
// with the message at seq, so that the call will not be delivered again:
// its ack floor passed it (acknowledged, or ended), or it delivered it
// and awaits no acknowledgement at all (acknowledged, ended, or its
// deliveries ran out: the ack floor does not move past such a call), or
// it has nothing left to deliver nor awaits an acknowledgement, so that
// the call is no longer in the stream: taken and ended, or removed (its
// message deleted, the stream purged), which moves neither. false
// whenever it cannot tell (seq unknown, no answer). since is when the
// message was known stored: a look asked before then cannot tell.
func (c *Client) settled(ctx context.Context, tool string, seq uint64, since time.Time) bool {
	if seq == 0 {
		return false
	}
	info, _ := c.looks.look(ctx, c, tool, since)
	return info != nil && (info.AckFloor.Stream >= seq || info.Delivered.Stream >= seq && info.NumAckPending == 0 ||
		info.NumPending == 0 && info.NumAckPending == 0)
}

// undelivered reports whether the calls stream's consumer of tool has
// not delivered the message at seq to any worker, so that no final of
// the call is kept and a silent call need not read the results bucket:
// the consumer's delivered stream sequence is below seq (it delivers in
// stream order) and the consumer is older than the message, so that its
// deliveries are all there were of it (one made again since, the last
// deleted while idle, counts none of the last one's). The ages are
// compared each on one clock, never the server's stamps against the
// client's clock: the consumer's on the server's (the info's stamp less
// its creation) against the call's on the client's, from before it was
// sent (sent) to when the look was answered, which is no shorter than
// the time since it was stored. false whenever it cannot tell (seq
// unknown, no answer, a server that stamps no info). since is when the
// message was known stored (settled).
func (c *Client) undelivered(ctx context.Context, tool string, seq uint64, sent, since time.Time) bool {
	if seq == 0 {
		return false
	}
	info, answered := c.looks.look(ctx, c, tool, since)
	return info != nil && !info.TimeStamp.IsZero() && info.Delivered.Stream < seq &&
		info.TimeStamp.Sub(info.Created) > answered.Sub(sent)
}

// consumerLooks shares a client's looks at its tools' consumers of the
// calls stream (settled) among the calls waiting on them: a backlog of
// silent durable calls would otherwise ask JetStream for the consumer's
// info once per call at each of their looks. A look answers the calls
// whose message was stored before it was asked (an earlier one may not
// count their message), for half a stall timeout, the least a silent
// call waits between its looks (at most durableLookEvery/2); one in
// flight is awaited rather than asked again. A call's wait, the asking
// one's too, ends with its ctx (its caller's cancel or deadline) while
// the look goes on for the others.
type consumerLooks struct {
	mu   sync.Mutex
	last map[string]*consumerLook // tool → its latest look; answered ones swept past maxConsumersSeen
}

// consumerLook is one look at a tool's consumer. info, nil when the look
// went unanswered, and at, when its answer came, are set before
// done is closed and not changed after.
type consumerLook struct {
	asked time.Time
	done  chan struct{}
	info  *jetstream.ConsumerInfo
	at    time.Time
}

// look answers the info of tool's consumer asked after since, shared
// with the client's other calls (nil when it cannot be had), and when
// the answer came; nil at once when ctx ends first, the look going on
// for the calls sharing it.
func (l *consumerLooks) look(ctx context.Context, c *Client, tool string, since time.Time) (*jetstream.ConsumerInfo, time.Time) {
	fresh := min(c.opts.StallTimeout, durableLookEvery) / 2
	l.mu.Lock()
	cl := l.last[tool]
	if cl == nil || !cl.asked.After(since) || cl.answered() && time.Since(cl.asked) >= fresh {
		if l.last == nil {
			l.last = make(map[string]*consumerLook)
		}
		if _, ok := l.last[tool]; !ok && len(l.last) >= maxConsumersSeen {
			for name, old := range l.last {
				if old.answered() {
					delete(l.last, name)
				}
			}
		}
		cl = &consumerLook{asked: time.Now(), done: make(chan struct{})}
		l.last[tool] = cl
		l.mu.Unlock()
		// Asked for every call sharing it, the one asking included,
		// which awaits it as the others do: one caller's end (its
		// cancel, its deadline) ends its own wait, not the look. The
		// look ends on its own, within lookupWait.
		go func() {
			cl.info = c.consumerInfo(context.WithoutCancel(ctx), tool)
			cl.at = time.Now()
			close(cl.done)
		}()
	} else {
		l.mu.Unlock()
	}
	select {
	case <-cl.done:
		return cl.info, cl.at
	case <-ctx.Done():
		return nil, time.Time{}
	}
}

// answered reports whether the look has its answer.
func (cl *consumerLook) answered() bool {
	select {
	case <-cl.done:
		return true
	default:
		return false
	}
}

// consumerInfo asks JetStream for the info of tool's consumer of the
// calls stream, within lookupWait; nil when it cannot be had.
func (c *Client) consumerInfo(ctx context.Context, tool string) *jetstream.ConsumerInfo {
	js, err := c.jetStream()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.lookWait, lookupWait))
	defer cancel()
	cons, err := js.Consumer(ctx, wire.StreamCalls, tool)
	if err != nil {
		return nil
	}
	return cons.CachedInfo()
}
