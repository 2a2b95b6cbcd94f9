package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/toolbus/toolbus/bus/wire"
)

// Wire-level error codes from the auditor (--audit).
const (
	errWireNoFinal  = "wire_no_final"
	errWireDupFinal = "wire_duplicate_final"
	errWireSeqGap   = "wire_seq_gap"
)

// isAuditCode says whether code is one of the auditor's.
func isAuditCode(code string) bool {
	return code == errWireNoFinal || code == errWireDupFinal || code == errWireSeqGap
}

// auditor listens, on its own connection, to every reply frame sent to
// the caller's inboxes and checks each toolbus call got exactly one final
// on the wire, with frames numbered without gaps. The client's own checks
// cannot see a second final: it stops listening after the first.
//
// A call the client sent again after a lost attempt (retries) travels
// under an id of its own per attempt (<id>-r<n>): each attempt is checked
// as a call of its own (no two finals, no gaps), and the call has its
// final when one of its attempts has. A lost attempt has none.
type auditor struct {
	nc  *nats.Conn
	sub *nats.Subscription

	mu    sync.Mutex
	calls map[string]*wireCall
}

type wireCall struct {
	finals  int
	lastSeq uint64
	gaps    int
	// failed: the client reported the call failed (unavailable,
	// worker_lost, ...), an error the point counts already; no final on
	// the wire is then not counted again.
	failed bool
	// retryOf is the id of the call this is an attempt of, sent again;
	// "" for the call as its caller sent it.
	retryOf string
	// attemptFinal: an attempt sent again had its final.
	attemptFinal bool
}

// retryOf is the call id an attempt id (<id>-r<n>, n ≥ 2) is an attempt
// of, or "".
func retryOf(id string) string {
	i := strings.LastIndex(id, "-r")
	if i <= 0 {
		return ""
	}
	if n, err := strconv.Atoi(id[i+2:]); err != nil || n < 2 {
		return ""
	}
	return id[:i]
}

// newInboxPrefix is the caller connection's inbox prefix, so the
// auditor hears the caller's replies and nobody else's. Workers reply
// only under _INBOX.
func newInboxPrefix() string { return "_INBOX.bench_" + nuid.Next() }

func newAuditor(nc *nats.Conn, prefix string) (*auditor, error) {
	a := &auditor{nc: nc, calls: map[string]*wireCall{}}
	sub, err := nc.Subscribe(prefix+".>", a.onMsg)
	if err != nil {
		return nil, fmt.Errorf("audit subscription: %w", err)
	}
	sub.SetPendingLimits(-1, -1)
	a.sub = sub
	return a, nc.Flush()
}

// expect registers a call id before its request is published.
func (a *auditor) expect(id string) {
	a.mu.Lock()
	a.calls[id] = &wireCall{}
	a.mu.Unlock()
}

// failed marks a call the client reported failed.
func (a *auditor) failed(id string) {
	a.mu.Lock()
	if c := a.calls[id]; c != nil {
		c.failed = true
	}
	a.mu.Unlock()
}

func (a *auditor) onMsg(m *nats.Msg) {
	f := new(wire.Frame)
	if err := wire.Msgpack.Unmarshal(m.Data, f); err != nil || f.Check() != nil {
		return // a raw baseline reply
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.calls[f.ID]
	if c == nil {
		first := retryOf(f.ID)
		if a.calls[first] == nil {
			return
		}
		c = &wireCall{retryOf: first}
		a.calls[f.ID] = c
	}
	if f.Seq != c.lastSeq+1 {
		c.gaps++
	}
	c.lastSeq = max(c.lastSeq, f.Last())
	if f.Kind == wire.KindFinal {
		c.finals++
	}
}

// settle waits until the frames already sent have been heard, then
// reports the calls whose wire traffic was wrong, and forgets them all.
func (a *auditor) settle() map[string]int64 {
	a.nc.Flush()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if n, _, _ := a.sub.Pending(); n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the callback holding the last message
	a.mu.Lock()
	defer a.mu.Unlock()
	errs := map[string]int64{}
	for _, c := range a.calls {
		if c.retryOf != "" && c.finals > 0 {
			a.calls[c.retryOf].attemptFinal = true
		}
	}
	for _, c := range a.calls {
		switch {
		case c.finals == 0 && !c.attemptFinal && !c.failed && c.retryOf == "":
			errs[errWireNoFinal]++
		case c.finals > 1:
			errs[errWireDupFinal]++
		}
		if c.gaps > 0 {
			errs[errWireSeqGap]++
		}
	}
	clear(a.calls)
	return errs
}
