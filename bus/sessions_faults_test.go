package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// rvFrame is a JSON reply frame, as much as these tests read.
type rvFrame struct {
	Kind  string `json:"kind"`
	Seq   uint64 `json:"seq"`
	Final *struct {
		Code     string          `json:"code"`
		Content  []toolkit.Block `json:"content"`
		Metadata map[string]any  `json:"metadata"`
	} `json:"final"`
}

func (f rvFrame) meta(k string) string {
	if f.Final == nil {
		return ""
	}
	s, _ := f.Final.Metadata[k].(string)
	return s
}

func (f rvFrame) text() string {
	if f.Final == nil {
		return ""
	}
	s := ""
	for _, b := range f.Final.Content {
		s += b.Text
	}
	return s
}

var rvSeq atomic.Int64

// rvCall publishes a JSON call on subject and collects its frames until a
// final or wait, on a subscription of its own (on one server only: see
// rvInbox for a cluster).
func rvCall(t *testing.T, nc *nats.Conn, subject string, hdr nats.Header, session, value string, wait time.Duration) []rvFrame {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	return rvExchange(t, nc, subject, inbox, sub.NextMsg, hdr, session, value, wait)
}

// rvExchange publishes the call with reply subject inbox and reads its
// frames with next.
func rvExchange(t *testing.T, nc *nats.Conn, subject, inbox string, next func(time.Duration) (*nats.Msg, error), hdr nats.Header, session, value string, wait time.Duration) []rvFrame {
	t.Helper()
	id := fmt.Sprint("rv", rvSeq.Add(1), "x", time.Now().UnixNano())
	if hdr == nil {
		hdr = nats.Header{}
	}
	hdr.Set("Content-Type", "application/json")
	body, _ := json.Marshal(map[string]any{"id": id, "session": session, "input": map[string]any{"value": value}})
	if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: inbox, Header: hdr, Data: body}); err != nil {
		t.Fatal(err)
	}
	var frames []rvFrame
	end := time.Now().Add(wait)
	for {
		m, err := next(time.Until(end))
		if err != nil {
			return frames
		}
		var f rvFrame
		if err := json.Unmarshal(m.Data, &f); err != nil {
			t.Fatalf("frame %q: %v", m.Data, err)
		}
		frames = append(frames, f)
		if f.Kind == "final" {
			return frames
		}
	}
}

// rvInbox is a caller's one reply subscription (subjects.md: callers
// subscribe once), made before its calls and known to every server of a
// cluster. A subscription per call is not enough there: a call passed on
// to its session's worker on a third server is answered from that server,
// and NATS carries a new subscription's interest there by another route
// than the call, so in the same instant the server may not know it yet
// and drops the frames.
type rvInbox struct {
	nc     *nats.Conn
	prefix string
	mu     sync.Mutex
	calls  map[string]chan *nats.Msg
}

func newRVInbox(t *testing.T, nc *nats.Conn, servers []string) *rvInbox {
	t.Helper()
	in := &rvInbox{nc: nc, prefix: nats.NewInbox() + ".", calls: map[string]chan *nats.Msg{}}
	sub, err := nc.Subscribe(in.prefix+"*", func(m *nats.Msg) {
		in.mu.Lock()
		ch := in.calls[m.Subject]
		in.mu.Unlock()
		select {
		case ch <- m:
		default: // not a call's, or more than a call sends
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	probe, next := in.open()
	defer in.close(probe)
	for _, u := range servers {
		c := natstest.URLConn(t, u)
		for deadline := time.Now().Add(10 * time.Second); ; {
			if err := c.Publish(probe, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := next(20 * time.Millisecond); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the inbox subscription never reached %s", u)
			}
		}
		c.Close()
	}
	return in
}

// open is a new reply subject and how to read what arrives on it.
func (in *rvInbox) open() (string, func(time.Duration) (*nats.Msg, error)) {
	subject := in.prefix + fmt.Sprint(rvSeq.Add(1))
	ch := make(chan *nats.Msg, 64)
	in.mu.Lock()
	in.calls[subject] = ch
	in.mu.Unlock()
	return subject, func(d time.Duration) (*nats.Msg, error) {
		select {
		case m := <-ch:
			return m, nil
		case <-time.After(d):
			return nil, nats.ErrTimeout
		}
	}
}

func (in *rvInbox) close(subject string) {
	in.mu.Lock()
	delete(in.calls, subject)
	in.mu.Unlock()
}

// call is rvCall on this inbox.
func (in *rvInbox) call(t *testing.T, subject string, hdr nats.Header, session, value string, wait time.Duration) []rvFrame {
	t.Helper()
	reply, next := in.open()
	defer in.close(reply)
	return rvExchange(t, in.nc, subject, reply, next, hdr, session, value, wait)
}

func rvFinal(t *testing.T, frames []rvFrame) rvFrame {
	t.Helper()
	if len(frames) == 0 || frames[len(frames)-1].Kind != "final" {
		t.Fatalf("no final: %+v", frames)
	}
	return frames[len(frames)-1]
}

// rvWorker serves storeToolkit on nc with session affinity as so says.
func rvWorker(t *testing.T, nc *nats.Conn, instance string, so *bus.SessionsOptions) *bus.Worker {
	t.Helper()
	so.JetStream = natstest.JS(t, nc)
	return serve(t, nc, storeToolkit(t), &bus.WorkerOptions{Instance: instance, Sessions: so})
}

// TestSessionStaleOwnerAfterTakeover: w1 holds session s and freezes for
// longer than the probe timeout; w2 takes the session over. Once w1 is
// back, the session's calls that reach it go to w2: a worker trusts its
// memory of holding a pin for less than the probe timeout.
func TestSessionStaleOwnerAfterTakeover(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	so := func() *bus.SessionsOptions { return &bus.SessionsOptions{ProbeTimeout: 200 * time.Millisecond} }
	rvWorker(t, px.Conn(t), "w1", so())
	rvWorker(t, natstest.Connect(t, s), "w2", so())
	nc := natstest.Connect(t, s)

	f := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w1", "put", ""), nil, "s", "old", guard))
	if f.meta(wire.MetaSessionWorker) != "w1" {
		t.Fatalf("claim: %+v", f.Final)
	}
	px.Pause()
	// A call of the session reaches w2 (as from the queue group): w1 does
	// not answer the probe, w2 takes the session over.
	f = rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w2", "put", ""), nil, "s", "new", guard))
	px.Resume()
	if f.meta(wire.MetaSessionWorker) != "w2" || f.meta(wire.MetaSessionMovedFrom) != "w1" {
		t.Fatalf("take-over: %+v", f.Final)
	}
	// w1 is back. The session's calls through the queue group.
	ran := map[string]int{}
	for range 20 {
		f := rvFinal(t, rvCall(t, nc, wire.CallSubject("get", ""), nil, "s", "", guard))
		ran[f.meta(wire.MetaWorker)+"="+f.text()]++
	}
	if len(ran) != 1 || ran["w2=new"] != 20 {
		t.Fatalf("session s is pinned to w2, but its calls ran: %v", ran)
	}
}

// TestSessionForwardAfterHeartbeats: a call reaches w2 while its session is
// pinned to w1, whose answer to the probe is slow; w2 sends the caller
// heartbeats meanwhile, then passes the call on, and w1 numbers its frames
// after them (Toolbus-Seq-After), so the caller takes w1's final.
func TestSessionForwardAfterHeartbeats(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	so := func() *bus.SessionsOptions { return &bus.SessionsOptions{ProbeTimeout: 5 * time.Second} }
	rvWorker(t, px.Conn(t), "w1", so())
	rvWorker(t, natstest.Connect(t, s), "w2", so())
	nc := natstest.Connect(t, s)
	if f := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w1", "put", ""), nil, "s", "v", guard)); f.meta(wire.MetaSessionWorker) != "w1" {
		t.Fatalf("claim: %+v", f.Final)
	}
	px.Pause()
	time.AfterFunc(300*time.Millisecond, px.Resume)
	frames := rvCall(t, nc, wire.PinnedSubject("w2", "get", ""), nats.Header{wire.HeaderHeartbeat: {"20"}}, "s", "", guard)
	var seqs []string
	for _, f := range frames {
		seqs = append(seqs, fmt.Sprintf("%s:%d", f.Kind, f.Seq))
	}
	t.Logf("frames: %v", seqs)
	f := rvFinal(t, frames)
	for i, fr := range frames {
		if fr.Seq != uint64(i+1) {
			t.Fatalf("frame %d has seq %d (frames %v): the client drops the final %+v as an old frame", i+1, fr.Seq, seqs, f.Final)
		}
	}
}

// TestSessionReclaimRenews: w1 claims the session, stops and starts again
// with the same instance id. The session's next call, past half the TTL,
// writes the pin again (taking the session over from w1's earlier run:
// TestSessionRestartedUnderSameID), so it does not expire while in use and
// no other worker claims the session while w1 runs it.
func TestSessionReclaimRenews(t *testing.T) {
	const ttl = 4 * time.Second
	s := natstest.Embedded(t, false)
	so := func() *bus.SessionsOptions { return &bus.SessionsOptions{TTL: ttl} }
	nc := natstest.Connect(t, s)
	w1 := rvWorker(t, natstest.Connect(t, s), "w1", so())
	f := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w1", "put", ""), nil, "s", "one", guard))
	if f.meta(wire.MetaSessionWorker) != "w1" {
		t.Fatalf("claim: %+v", f.Final)
	}
	claimed := time.Now()
	w1.Stop(ctxT(t))
	rvWorker(t, natstest.Connect(t, s), "w1", so()) // restarted, same id
	rvWorker(t, natstest.Connect(t, s), "w2", so())
	b, err := natstest.JS(t, nc).KeyValue(ctxT(t), wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	// The pin as it is before the next call; on a machine slow to restart
	// the workers it may have expired already, and the call writes it anew.
	var rev0 uint64
	if e0, err := b.Get(ctxT(t), "s"); err == nil {
		rev0 = e0.Revision()
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal(err)
	}
	time.Sleep(time.Until(claimed.Add(ttl/2 + 500*time.Millisecond)))
	f = rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w1", "put", ""), nil, "s", "two", guard))
	if f.meta(wire.MetaSessionWorker) != "w1" {
		t.Fatalf("used: %+v", f.Final)
	}
	e1, err := b.Get(ctxT(t), "s")
	if err == nil && e1.Revision() == rev0 {
		t.Errorf("a call %v after the pin was written (TTL %v) did not renew it (revision %d)", time.Since(claimed).Round(time.Millisecond), ttl, e1.Revision())
	}
	// The consequence: the pin expires, w2 claims the session, w1 still
	// runs it.
	natstest.WaitFor(t, "the pin to expire", func() bool {
		_, err := b.Get(context.Background(), "s")
		return err == jetstream.ErrKeyNotFound || (err != nil && err.Error() == jetstream.ErrKeyNotFound.Error())
	})
	f2 := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w2", "put", ""), nil, "s", "three", guard))
	f1 := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w1", "get", ""), nil, "s", "", guard))
	if f2.meta(wire.MetaSessionWorker) == "w2" && f1.meta(wire.MetaWorker) == "w1" {
		t.Fatalf("both hold the session: w2 claimed it (%q), w1 ran a call of it (%q, session_worker %q) %v after its claim",
			f2.text(), f1.text(), f1.meta(wire.MetaSessionWorker), time.Since(claimed).Round(time.Millisecond))
	}
}

// TestSessionTakeoverRaceR3: on a replicated sessions bucket two workers
// take a session over at once; the one that loses the compare-and-set
// (ErrKeyRevisionMismatch there) reads the winner's pin, from the stream
// leader if its replica lags, and passes the call on: every session ends
// on one worker.
func TestSessionTakeoverRaceR3(t *testing.T) {
	c := natstest.NewCluster(t)
	nodes := c.Nodes()
	conn := func(i int) *nats.Conn { return natstest.URLConn(t, nodes[i].ClientURL()) }
	so := func() *bus.SessionsOptions { return &bus.SessionsOptions{Replicas: 3} }
	w1 := rvWorker(t, conn(0), "w1", so())
	rvWorker(t, conn(1), "w2", so())
	rvWorker(t, conn(2), "w3", so())
	// The calls to w2 passed on to w3 are answered from node 2.
	in := newRVInbox(t, conn(0), []string{nodes[0].ClientURL(), nodes[1].ClientURL(), nodes[2].ClientURL()})
	const n = 20
	for i := range n {
		if f := rvFinal(t, in.call(t, wire.PinnedSubject("w1", "put", ""), nil, fmt.Sprint("s", i), "v", 10*time.Second)); f.meta(wire.MetaSessionWorker) != "w1" {
			t.Fatalf("claim: %+v", f.Final)
		}
	}
	w1.Stop(ctxT(t)) // gone: its sessions move with their next call
	bad := 0
	for i := range n {
		var wg sync.WaitGroup
		var fs [2]rvFrame
		for j, w := range []string{"w2", "w3"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fs[j] = rvFinal(t, in.call(t, wire.PinnedSubject(w, "put", ""), nil, fmt.Sprint("s", i), w, 10*time.Second))
			}()
		}
		wg.Wait()
		a, b := fs[0].meta(wire.MetaSessionWorker), fs[1].meta(wire.MetaSessionWorker)
		if a == "" || a != b {
			bad++
			t.Errorf("s%d: the two calls ran on %s (session_worker %q) and %s (session_worker %q)",
				i, fs[0].meta(wire.MetaWorker), a, fs[1].meta(wire.MetaWorker), b)
		}
	}
	if bad > 0 {
		t.Logf("%d of %d sessions ran on two workers", bad, n)
	}
}

// TestSessionStopAnswersPinnedCall: a call sent to a session's worker
// directly (tools.pinned.w1.put) is on its way when w1 stops: the pinned
// subscription is drained like the queue group's, and the call answered.
func TestSessionStopAnswersPinnedCall(t *testing.T) {
	s := natstest.Embedded(t, true)
	px := natstest.ProxyTo(t, s)
	w1 := rvWorker(t, px.Conn(t), "w1", &bus.SessionsOptions{})
	nc := natstest.Connect(t, s)
	if f := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w1", "put", ""), nil, "s", "v", guard)); f.meta(wire.MetaSessionWorker) != "w1" {
		t.Fatalf("claim: %+v", f.Final)
	}
	// The same for the queue group, for comparison.
	px.Pause()
	type res struct {
		what   string
		frames []rvFrame
	}
	out := make(chan res, 2)
	go func() {
		out <- res{"pinned", rvCall(t, nc, wire.PinnedSubject("w1", "put", ""), nil, "s", "x", guard)}
	}()
	go func() {
		out <- res{"queue", rvCall(t, nc, wire.CallSubject("put", ""), nil, "s", "y", guard)}
	}()
	time.Sleep(200 * time.Millisecond) // both delivered to w1's connection
	stopped := make(chan struct{})
	go func() { w1.Stop(ctxT(t)); close(stopped) }()
	time.Sleep(200 * time.Millisecond)
	px.Resume()
	<-stopped
	for range 2 {
		r := <-out
		if len(r.frames) == 0 || r.frames[len(r.frames)-1].Kind != "final" {
			t.Errorf("%s call in flight at stop: no final (%d frames)", r.what, len(r.frames))
		} else {
			t.Logf("%s call: %s %q", r.what, r.frames[len(r.frames)-1].Final.Code, r.frames[len(r.frames)-1].text())
		}
	}
}

// TestSessionRestartedUnderSameID: w1 holds session s, stops and is
// started again under the same instance id (a container restarted keeps
// its hostname and often its pid, so the default id): the new run has
// none of the state the earlier one kept. The session's next call, sent
// to w1 directly (a client's pin) or through the queue group, says so:
// session_moved_from names w1's earlier run, and a line of text. The
// call after it runs on without a notice.
func TestSessionRestartedUnderSameID(t *testing.T) {
	for _, via := range []string{"pinned", "queue"} {
		t.Run(via, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			so := func() *bus.SessionsOptions { return &bus.SessionsOptions{} }
			nc := natstest.Connect(t, s)
			w1 := rvWorker(t, natstest.Connect(t, s), "w1", so())
			f := rvFinal(t, rvCall(t, nc, wire.CallSubject("put", ""), nil, "s", "one", guard))
			if f.meta(wire.MetaSessionWorker) != "w1" {
				t.Fatalf("claim: %+v", f.Final)
			}
			w1.Stop(ctxT(t))
			rvWorker(t, natstest.Connect(t, s), "w1", so()) // started again: its store is empty
			subject := wire.PinnedSubject("w1", "get", "")
			if via == "queue" {
				rvWorker(t, natstest.Connect(t, s), "w2", so())
				subject = wire.CallSubject("get", "")
			}
			f = rvFinal(t, rvCall(t, nc, subject, nil, "s", "", guard))
			if f.meta(wire.MetaSessionWorker) != "w1" || f.meta(wire.MetaSessionMovedFrom) != "w1" || !strings.Contains(f.text(), "earlier run of worker w1") {
				t.Fatalf("the first call after the restart: %q, metadata %v; want it to say the session's state on w1's earlier run is gone", f.text(), f.Final.Metadata)
			}
			f = rvFinal(t, rvCall(t, nc, subject, nil, "s", "", guard))
			if f.meta(wire.MetaSessionWorker) != "w1" || f.meta(wire.MetaSessionMovedFrom) != "" || strings.Contains(f.text(), "[toolbus]") {
				t.Fatalf("the next call: %q, metadata %v; want it on w1 without a notice", f.text(), f.Final.Metadata)
			}
		})
	}
}
