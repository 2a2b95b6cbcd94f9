package discovery

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// logQueueLen bounds the records a Fleet's or an Announcer's Logger has
// not written yet.
const logQueueLen = 256

// logQueue hands a Fleet's or an Announcer's log records to its Logger on
// a goroutine of its own, so a Logger that is slow or never returns (a
// handler writing to a full pipe, a hook waiting on a lock) holds up
// nothing but their logging: the fleet logs from its intake, its timers
// and under its lock, and a stuck record froze the view (nothing read,
// nothing expired); the announcer logs under the lock its messages go out
// under and while answering discover requests, and a stuck record stopped
// the worker announcing. Past logQueueLen waiting records, new ones are
// dropped and counted; the count is logged once the Logger takes records
// again.
type logQueue struct {
	who     string // "fleet" or "announcer", in the record about drops
	recs    chan queuedRecord
	dropped atomic.Uint64
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

type queuedRecord struct {
	h slog.Handler
	r slog.Record
}

// newLogQueue starts the goroutine that writes to inner, and returns a
// logger that queues for it; close stops the goroutine. who names the
// owner in the record about dropped records.
func newLogQueue(who string, inner slog.Handler) (*logQueue, *slog.Logger) {
	q := &logQueue{who: who, recs: make(chan queuedRecord, logQueueLen), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run(inner)
	return q, slog.New(queuedHandler{q: q, h: inner})
}

func (q *logQueue) run(inner slog.Handler) {
	defer close(q.done)
	for {
		select {
		case e := <-q.recs:
			q.write(inner, e)
		case <-q.stop:
			// What was queued before the fleet closed is still written.
			for {
				select {
				case e := <-q.recs:
					q.write(inner, e)
				default:
					return
				}
			}
		}
	}
}

func (q *logQueue) write(inner slog.Handler, e queuedRecord) {
	ctx := context.Background()
	if e.h.Enabled(ctx, e.r.Level) {
		e.h.Handle(ctx, e.r)
	}
	if n := q.dropped.Swap(0); n > 0 && inner.Enabled(ctx, slog.LevelWarn) {
		r := slog.NewRecord(time.Now(), slog.LevelWarn, "discovery: "+q.who+": log records dropped: the Logger fell behind", 0)
		r.AddAttrs(slog.Uint64("dropped", n), slog.Int("queue", logQueueLen))
		inner.Handle(ctx, r)
	}
}

// close stops the goroutine once it has written what is queued, and
// waits for it (for the record being written, however long the Logger
// takes). Records queued after close are not written.
func (q *logQueue) close() {
	q.once.Do(func() { close(q.stop) })
	<-q.done
}

// queuedHandler queues records for the logQueue's goroutine, which asks
// h whether it wants them: never blocks.
type queuedHandler struct {
	q *logQueue
	h slog.Handler
}

func (h queuedHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h queuedHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.q.recs <- queuedRecord{h: h.h, r: r.Clone()}:
	default:
		h.q.dropped.Add(1)
	}
	return nil
}

func (h queuedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return queuedHandler{q: h.q, h: h.h.WithAttrs(attrs)}
}

func (h queuedHandler) WithGroup(name string) slog.Handler {
	return queuedHandler{q: h.q, h: h.h.WithGroup(name)}
}
