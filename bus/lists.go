package bus

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// List requests are answered on goroutines of their own: an answer may
// wait for the session's group state (up to listWait for a revision the
// bucket has not reached, which a caller may name at will), and one
// caller's requests must not hold up another's behind them on the
// subscription. At most maxListsPerCaller requests of one caller identity
// (the anonymous callers are one) and maxLists in all are answered at
// once; one past either bound is answered at once with an error.
const (
	maxListsPerCaller = 4
	maxLists          = 256
	listWait          = 10 * time.Second
)

// listing is the worker's list requests being answered.
type listing struct {
	ctx    context.Context // cancelled by Stop: the answers still waiting end
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	by map[string]int // identity → its requests being answered
	n  int
}

func newListing() *listing {
	ctx, cancel := context.WithCancel(context.Background())
	return &listing{ctx: ctx, cancel: cancel, by: map[string]int{}}
}

// take counts a request of identity; "" when it may be answered, else why
// not.
func (l *listing) take(identity string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.by[identity] >= maxListsPerCaller:
		return fmt.Sprintf("BusyError: %d list requests of this caller are being answered; send it again when one of them is.", maxListsPerCaller)
	case l.n >= maxLists:
		return fmt.Sprintf("BusyError: %d list requests are being answered; send it again in a moment.", maxLists)
	}
	l.by[identity]++
	l.n++
	l.wg.Add(1)
	return ""
}

func (l *listing) done(identity string) {
	l.mu.Lock()
	if l.by[identity]--; l.by[identity] == 0 {
		delete(l.by, identity)
	}
	l.n--
	l.mu.Unlock()
	l.wg.Done()
}

// stop ends the answers still waiting and waits for them.
func (l *listing) stop() {
	l.cancel()
	l.wg.Wait()
}

// onList answers wire.SubjectList with the tools and the session's
// schemas, on a goroutine of its own (listing).
func (w *Worker) onList(m *nats.Msg) {
	identity := strings.TrimPrefix(strings.TrimPrefix(m.Subject, wire.SubjectList), ".")
	if !w.answerable(&incoming{subject: m.Subject, identity: identity, reply: m.Reply}, "", "a list request") {
		return
	}
	if busy := w.lists.take(identity); busy != "" {
		w.respondList(m, &wire.ListReply{Worker: w.opts.Instance, Error: busy})
		return
	}
	go func() {
		defer w.lists.done(identity)
		w.answerList(m, identity)
	}()
}

func (w *Worker) answerList(m *nats.Msg, identity string) {
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
	if reply.Error == "" {
		var err error
		if rev, err = parseRevision(m.Header); err != nil {
			reply.Error = "BadRequestError: " + err.Error()
		}
	}
	if reply.Error == "" {
		reply.Tools = servedTools(w.tk)
		ctx, cancel := context.WithTimeout(w.lists.ctx, listWait)
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
