package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// List requests (tools.list, subjects.md) are queued by caller identity
// and answered by at most maxListers goroutines. An answer may wait for
// the session's group state: up to RevisionWait for a revision the bucket
// has not reached, which a caller may name at will. So each caller's
// requests are answered in order, one at a time, and the callers with
// requests waiting take turns: one caller's slow requests hold up its own
// (the anonymous callers are one caller) and take at most one of the
// maxListers, so others wait for them only when several callers' slow
// requests fill every lister (each at most RevisionWait, or a stream
// leader's election), and then for a turn, not for a queue. No
// request is refused while the queue has room; a caller's bursts (a
// client asking tools.list for each call that found no responders) are
// answered in order. Past maxListsPerCaller requests of one caller
// waiting, or maxListBytesPerCaller of its bytes, or maxListBytes in all,
// a request is answered at once with a BusyError: one caller's large
// requests (a body may be as large as the server's max_payload) fill its
// own share, not the whole queue, so another caller's are still taken.
const (
	maxListers            = 4
	maxListsPerCaller     = 256
	maxListBytes          = 64 << 20
	maxListBytesPerCaller = maxListBytes / 8
	// listOverhead is what a queued request counts beyond its bytes
	// (the message, its subjects' and payload's allocations), and
	// listHeaderHeld, listHeaderEntryHeld and listHeaderValueHeld what
	// the map of its parsed headers holds besides: a request with one
	// header holds about twice its bytes and listOverhead.
	listOverhead        = 256
	listHeaderHeld      = 512
	listHeaderEntryHeld = 128
	listHeaderValueHeld = 48
	// listWait bounds one answer: a moment without a stream leader is
	// ridden out within it.
	listWait = 10 * time.Second
)

// errStopping ends the list answers still waiting when the worker stops.
var errStopping = errors.New("the worker is stopping")

// listQueue holds the list requests not yet answered, by caller identity.
type listQueue struct {
	ctx    context.Context // cancelled by stop: answers still waiting end
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	by      map[string]*callerLists
	ready   []string // callers with requests waiting and none being answered, in turn
	listers int
	bytes   int
	stopped bool
}

// callerLists are one caller's requests waiting, oldest first.
type callerLists struct {
	q     []*nats.Msg
	busy  bool // one of its requests is being answered
	bytes int  // listSize of its requests waiting and being answered
}

func newListQueue() *listQueue {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &listQueue{ctx: ctx, cancel: cancel, by: map[string]*callerLists{}}
}

func listSize(m *nats.Msg) int {
	n := len(m.Subject) + len(m.Reply) + len(m.Data) + headerSize(m.Header) + listOverhead
	if len(m.Header) > 0 {
		n += listHeaderHeld
		for _, vs := range m.Header {
			n += listHeaderEntryHeld + listHeaderValueHeld*len(vs)
		}
	}
	return n
}

// onList queues a list request (the subscription's callback: it never
// waits).
func (w *Worker) onList(m *nats.Msg) {
	identity := strings.TrimPrefix(strings.TrimPrefix(m.Subject, wire.SubjectList), ".")
	if !w.answerable(&incoming{subject: m.Subject, identity: identity, reply: m.Reply}, "", "a list request") {
		return
	}
	if refused := w.lists.add(w, m, identity); refused != "" {
		w.respondList(m, &wire.ListReply{Worker: w.opts.Instance, Error: refused})
	}
}

// add queues m, starting a lister when one may start; it returns why not
// when m is not queued (the answer to send at once).
func (l *listQueue) add(w *Worker, m *nats.Msg, identity string) string {
	size := listSize(m)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.by[identity]
	switch {
	case l.stopped:
		return "ToolUnavailableError: the worker is stopping; send the list request again."
	case c != nil && len(c.q) >= maxListsPerCaller:
		return fmt.Sprintf("BusyError: %d list requests of this caller are waiting; send it again when they are answered.", maxListsPerCaller)
	case c != nil && c.bytes+size > maxListBytesPerCaller:
		return fmt.Sprintf("BusyError: this caller's list requests waiting hold %d bytes, its share; send it again when they are answered.", c.bytes)
	case l.bytes+size > maxListBytes:
		return "BusyError: too many list requests are waiting; send it again in a moment."
	}
	if c == nil {
		c = &callerLists{}
		l.by[identity] = c
	}
	c.q = append(c.q, m)
	c.bytes += size
	l.bytes += size
	if !c.busy && len(c.q) == 1 {
		l.ready = append(l.ready, identity)
	}
	if l.listers < maxListers && len(l.ready) > 0 {
		l.listers++
		l.wg.Add(1)
		go l.run(w)
	}
	return ""
}

// run answers the callers' requests in turn, one of a caller at a time,
// until none waits.
func (l *listQueue) run(w *Worker) {
	defer l.wg.Done()
	l.mu.Lock()
	for len(l.ready) > 0 {
		identity := l.ready[0]
		l.ready = l.ready[1:]
		c := l.by[identity]
		m := c.q[0]
		c.q[0] = nil
		c.q = c.q[1:]
		c.busy = true
		l.mu.Unlock()
		w.answerList(l.ctx, m, identity)
		l.mu.Lock()
		size := listSize(m)
		l.bytes -= size
		c.bytes -= size
		c.busy = false
		if len(c.q) == 0 {
			delete(l.by, identity)
		} else {
			l.ready = append(l.ready, identity)
		}
	}
	l.listers--
	l.mu.Unlock()
}

// stop takes no more requests, ends the waits for group state and waits
// for the listers: requests still queued are answered, with an error when
// they need the group state.
func (l *listQueue) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.cancel(errStopping)
	l.wg.Wait()
}

// answerList answers a list request with the tools and the session's
// schemas.
func (w *Worker) answerList(ctx context.Context, m *nats.Msg, identity string) {
	c := wire.CodecOf(m.Header)
	var req wire.ListRequest
	reply := wire.ListReply{Worker: w.opts.Instance}
	var rev uint64
	if len(m.Data) > 0 {
		if err := c.Unmarshal(m.Data, &req); err != nil {
			reply.Error = fmt.Sprintf("BadRequestError: the list request is not a valid %s object: %v", c, err)
		}
	}
	if v := m.Header.Get(wire.HeaderVersion); v != "" && v != wire.Version && reply.Error == "" {
		reply.Error = versionError(v)
	}
	if reply.Error == "" && strings.HasPrefix(req.Session, "\x00") {
		// As for a call: a scope's own form, which would read another
		// identity's session (toolkit.SplitScope).
		reply.Error = "BadRequestError: a session name must not start with a NUL character."
	}
	if reply.Error == "" {
		var err error
		if rev, err = parseRevision(m.Header); err != nil {
			reply.Error = "BadRequestError: " + err.Error()
		}
	}
	if reply.Error == "" {
		reply.Tools = servedTools(w.tk)
		ctx, cancel := context.WithTimeout(ctx, listWait)
		schemas, err := w.tk.SessionSchemas(ctx, toolkit.SessionScope(identity, req.Session), rev)
		cancel()
		if err != nil {
			reply = wire.ListReply{Worker: w.opts.Instance, Error: fmt.Sprintf("GroupStateError: could not read the active tool groups: %v", err)}
		} else {
			reply.Schemas = schemas
		}
	}
	w.respondList(m, &reply)
}

func (w *Worker) respondList(m *nats.Msg, reply *wire.ListReply) {
	if err := wire.Respond(w.nc, m, reply); err != nil {
		w.log.Error("bus: answering a list request", "err", err)
	}
}
