package bus

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Messages NATS dropped on the worker's side.
//
// nats.go drops a message for a subscription that is not taking its
// messages fast enough: the calls' channel (the worker's inbox, callQueue
// calls) is full, or a callback's pending limits are reached. It drops
// it silently, telling the connection's async error handler once per
// episode (nats.ErrSlowConsumer), a handler that belongs to whoever made
// the connection. A dropped call is never answered: its caller sees
// worker_lost once its stall timeout passes. So the worker reads each of
// its subscriptions' drop counts (nats.Subscription.Dropped), off the
// call path: once a second on its clock, and when its counters are read
// (Worker.Counters). WorkerCounters.Dropped has them by kind of
// subscription; a warning naming the kind is logged at most once a second
// for each. Drops between a subscription's last reading and its end (a
// removed tool's, after Stop) go uncounted.

// Kinds of the worker's subscriptions, the keys of WorkerCounters.Dropped.
const (
	// DroppedCalls: calls, on the tools' call subjects and the worker's
	// pinned subject (session affinity).
	DroppedCalls = "calls"
	// DroppedCancels: broadcast cancels.
	DroppedCancels = "cancels"
	// DroppedLists: list requests.
	DroppedLists = "lists"
	// DroppedAnswers: callers' answers to tools' requests (asks).
	DroppedAnswers = "answers"
	// DroppedServices: the services protocol's requests ($SRV).
	DroppedServices = "services"
	// DroppedProbes: other workers' probes for a session's worker.
	DroppedProbes = "probes"
	// DroppedReplies: answers to the worker's own requests (kept results'
	// writes, calls passed on) and the calls stream's advisories.
	DroppedReplies = "replies"
)

// dropKinds orders the kinds (dropWatch's arrays).
var dropKinds = [...]string{DroppedCalls, DroppedCancels, DroppedLists, DroppedAnswers, DroppedServices, DroppedProbes, DroppedReplies}

// dropConsequence is what a warning says follows from a kind's drops.
var dropConsequence = [len(dropKinds)]string{
	"their callers see worker_lost after their stall timeout; the worker's queue of calls was full (starved of CPU, or its readers stuck)",
	"those calls, if running here, run on to their end or deadline",
	"those list requests go unanswered",
	"those tools' requests wait on until their callers' answers time out",
	"those services requests go unanswered",
	"those sessions' calls may move to another worker",
	"those writes and calls passed on are awaited until their patience runs out",
}

func dropKind(kind string) int {
	for i, k := range dropKinds {
		if k == kind {
			return i
		}
	}
	panic("bus: unknown kind of subscription " + kind)
}

// dropCheck is how often the worker's clock reads the drop counts.
const dropCheck = time.Second

// dropWatch reads the drop counts of the worker's subscriptions. Its lock
// comes after w.mu and before the subscriptions' own.
type dropWatch struct {
	mu       sync.Mutex
	subs     []watchedSub
	total    [len(dropKinds)]uint64
	unlogged [len(dropKinds)]uint64 // counted since the last warning
}

type watchedSub struct {
	sub  *nats.Subscription
	kind int
	seen int // its drops counted so far
}

// watch adds sub, of kind, to the subscriptions read.
func (d *dropWatch) watch(kind string, sub *nats.Subscription) {
	i := dropKind(kind)
	d.mu.Lock()
	d.subs = append(d.subs, watchedSub{sub: sub, kind: i})
	d.mu.Unlock()
}

// read counts the drops since the last reading; a subscription that
// ended is forgotten.
func (d *dropWatch) read() {
	d.mu.Lock()
	defer d.mu.Unlock()
	subs := d.subs[:0]
	for _, s := range d.subs {
		n, err := s.sub.Dropped()
		if err != nil {
			continue // ended (nats.ErrBadSubscription)
		}
		if n > s.seen {
			d.total[s.kind] += uint64(n - s.seen)
			d.unlogged[s.kind] += uint64(n - s.seen)
			s.seen = n
		}
		subs = append(subs, s)
	}
	clear(d.subs[len(subs):])
	d.subs = subs
}

// counts are the totals by kind, every kind present.
func (d *dropWatch) counts() map[string]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]uint64, len(dropKinds))
	for i, k := range dropKinds {
		out[k] = d.total[i]
	}
	return out
}

// checkDrops reads the drop counts and warns of the drops not yet told,
// one line for each kind that has some.
func (w *Worker) checkDrops() {
	d := &w.drops
	d.read()
	var lines [len(dropKinds)]uint64
	var totals [len(dropKinds)]uint64
	d.mu.Lock()
	lines, totals, d.unlogged = d.unlogged, d.total, [len(dropKinds)]uint64{}
	d.mu.Unlock()
	for i, n := range lines {
		if n > 0 {
			w.log.Warn("bus: NATS dropped messages the worker did not take in time: "+dropConsequence[i],
				"subscription", dropKinds[i], "dropped", n, "total", totals[i])
		}
	}
}
