package bus

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// A durable call of a tool no worker has served (a typo, a tool never
// deployed) would wait in the calls stream until its deadline, and
// without one for good: nothing pulls it. Every worker serving a tool on
// the durable path makes the tool's consumer, which stays while the
// workers restart, so a missing consumer means no worker has served the
// tool. The client then answers not_found, as the core path does, and
// stores nothing.

// consumersSeen are the tools whose consumer of the calls stream a client
// has seen: their durable calls are queued without looking again, so a
// served tool's calls cost no JetStream request of their own. A missing
// consumer is not remembered: a worker may serve the tool by the next
// call.
type consumersSeen struct {
	tools sync.Map // tool → struct{}
	// failed is when a lookup last went unanswered (unix ns): for
	// lookupPause after one, calls are queued without a lookup, so a
	// lookup the server refuses (roles written before it) or a JetStream
	// without a leader costs one call lookupWait, not every call.
	failed atomic.Int64
}

// lookupWait bounds the lookup of a tool's consumer.
const lookupWait = 2 * time.Second

// lookupPause is how long after an unanswered lookup calls are queued
// without one.
const lookupPause = time.Minute

// unserved answers a durable call of a tool no worker has served:
// not_found when the calls stream has no consumer of the tool and the
// workers' tools.list does not name it either (a worker that has just
// started serving it may not have made its consumer yet); nil when the
// call is to be queued, also whenever the lookup cannot tell (no stream,
// no JetStream: queueing says so).
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
		c.consumers.tools.Store(call.Name, struct{}{})
		return nil
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)):
		c.consumers.failed.Store(time.Now().UnixNano())
		c.log.Debug("bus: the lookup of a durable tool's consumer went unanswered; queueing durable calls without one for "+lookupPause.String(), "tool", call.Name, "err", err)
		return nil
	default:
		return nil
	}
	lctx, cancel = context.WithTimeout(ctx, time.Second)
	defer cancel()
	if reply, err := c.List(lctx, ""); err == nil && slices.Contains(reply.Tools, call.Name) {
		return nil
	}
	return notFound(call)
}
