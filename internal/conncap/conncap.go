// Package conncap bounds the connections an HTTP server holds: the
// operator endpoint's (package opshttp) and the MCP gateway's
// (mcp.GatewayOptions.MaxConns) share these rules.
package conncap

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stall is how long a write of an answer takes nothing (its client reads
// nothing), or a read of a request's body gets nothing (its client sends
// nothing), before its connection may give its place to a new one.
const stall = 2 * time.Second

// answerGrace is how long a connection whose place was taken while its
// request's body did not come is given for that request's answer before
// it is closed.
const answerGrace = 10 * time.Second

// aLongTimeAgo is a deadline past, which makes a read in progress return.
var aLongTimeAgo = time.Unix(1, 0)

// epoch starts clock.
var epoch = time.Now()

// clock is a monotonic reading of now, never 0.
func clock() int64 { return int64(time.Since(epoch)) + 1 }

// capListener holds at most max of the connections it accepts. It keeps
// accepting, so the kernel's queue never fills with connections that would
// wait there behind whoever holds the slots. A connection that arrives when
// max are open takes the place of one without a request in progress, or of
// one whose client has read nothing of its answer for stall, or of one
// whose request's body has not come for stall (victim says which); when
// every open connection is serving a request to a client that reads and
// sends, the new one is closed at once.
//
// Connections it returns must be served by a server whose ConnState and
// ConnContext are the listener's and whose handler is wrapped by serving.
type capListener struct {
	net.Listener
	max int

	mu    sync.Mutex
	tick  uint64                // counts the moments a connection begins waiting
	conns map[*capConn]struct{} // the open ones
	held  map[netip.Prefix]int  // how many of them each source holds
}

// capConn is a connection of a capListener.
type capConn struct {
	net.Conn
	l   *capListener
	src netip.Prefix // source: the remote address, its /64 for IPv6
	// waiting is the tick at which it began waiting for a request, 0 while
	// it is serving one; guarded by l.mu.
	waiting uint64
	// got: the server has read bytes of a request it does not serve yet.
	got atomic.Bool
	// stalled: a write is in progress and its last round (stall long)
	// wrote nothing; the client reads nothing of its answer.
	stalled atomic.Bool
	// reading: the clock when the Read in progress began, 0 between
	// reads.
	reading atomic.Int64
	// body: the clock when the Read of the request's body in progress (by
	// its handler) began, 0 between reads.
	body atomic.Int64
	// answered: the clock when the handler of the request in progress
	// returned, 0 while it runs and between requests: a Read begun after
	// it reads the body the handler left, which the server discards to
	// keep the connection.
	answered atomic.Int64
	// cut: its place was taken while its request's body did not come:
	// every Read fails.
	cut    atomic.Bool
	closer atomic.Pointer[time.Timer] // closes it answerGrace after the cut
	// rounds: a write that reached its deadline may go on (a TCP or Unix
	// socket; not a TLS connection, whose state a timed-out write
	// corrupts): Write watches for stalls.
	rounds bool

	wmu   sync.Mutex
	wdl   time.Time // the write deadline the server set
	round time.Time // the deadline of the write round in progress, zero between writes

	once sync.Once
	err  error
}

// Cap makes hs hold at most max of the connections ln accepts at once,
// without ever refusing to accept (a connection left in the kernel's
// queue would wait there behind whoever holds the places): a connection
// that arrives at the bound takes the place of one without a request in
// progress, or of one whose client has read nothing of its answer for 2 s
// (a write taking nothing all that time), or of one whose client has sent
// nothing of its request's body for 2 s (a read of it, by the handler or
// by the server discarding what the handler left, getting nothing all
// that time). It is one of the source holding the most connections; among
// those, one that has sent nothing first, then one whose client reads or
// sends nothing, then the one that has waited longest. When every
// connection is serving a request to a client that reads and sends, the
// new one is closed at once. A request in progress is never cut to make
// room otherwise: an event stream counts as one for as long as it lasts,
// and a body that comes slowly (a byte a second) keeps its place. So a
// neighbour that fills every place with requests whose answers it does
// not read (pipelined, or large) gives its places to a probe as soon as
// its writes have stalled, not when hs's WriteTimeout ends them, and one
// that fills them with requests announcing bodies it never sends, as soon
// as their reads have, not at hs's read timeout. The connection of such a
// request is not closed at once: the read of its body fails (a timeout,
// os.ErrDeadlineExceeded), as does every read after it, so that its
// handler answers it (an error) and the server closes it after the
// answer; or it is closed 10 s later, answered or not.
// What is seen is the write, not the reading: a client reading so slowly
// that the kernel lets a blocked write go on only after 2 s (it waits for
// half of the socket's send queue to drain, which at a few KB/s takes
// longer) looks the same as one reading nothing, and may give its place
// too, when its address holds the most connections.
//
// It sets hs's ConnState and ConnContext (calling those hs had first)
// and wraps its Handler, so hs must be complete; serve hs on the listener
// it returns. max must be positive.
func Cap(hs *http.Server, ln net.Listener, max int) net.Listener {
	cl := newCapListener(ln, max)
	state, connCtx := hs.ConnState, hs.ConnContext
	hs.ConnState = func(c net.Conn, s http.ConnState) {
		if state != nil {
			state(c, s)
		}
		cl.connState(c, s)
	}
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if connCtx != nil {
			ctx = connCtx(ctx, c)
		}
		return cl.connContext(ctx, c)
	}
	h := hs.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	hs.Handler = cl.serving(h)
	return cl
}

func newCapListener(ln net.Listener, max int) *capListener {
	return &capListener{Listener: ln, max: max, conns: make(map[*capConn]struct{}), held: make(map[netip.Prefix]int)}
}

// Accept returns the next connection it holds, closing the one it replaces
// or the ones it turns away on the way.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &capConn{Conn: c, l: l, src: source(c.RemoteAddr()), rounds: resumable(c)}
		var victim *capConn
		var starved bool
		l.mu.Lock()
		if len(l.conns) >= l.max {
			if victim, starved = l.victim(cc.src); victim != nil {
				l.remove(victim)
			}
		}
		admit := len(l.conns) < l.max
		if admit {
			l.tick++
			cc.waiting = l.tick
			l.conns[cc] = struct{}{}
			l.held[cc.src]++
		}
		l.mu.Unlock()
		// Closed outside the lock: Close waits until the connection's
		// reader lets go of it, and that reader closes it too, which locks.
		switch {
		case starved:
			victim.cutBody()
		case victim != nil:
			victim.Close()
		}
		if admit {
			return cc, nil
		}
		c.Close()
	}
}

// victim picks the connection to close for a new one from src, among those
// without a request in progress, whose client reads nothing of its answer
// (stalled) or whose request's body does not come (starved), nil when
// there is none: one of the source holding the most connections (the new
// one counted), so a neighbour that floods the endpoint closes its own;
// among those, one that has sent nothing, then one whose client reads or
// sends nothing, so a request already on its way is served; and then the
// one that has waited longest. starved says the one picked was serving a
// request whose body does not come (and whose answer's write has not
// stalled): it is to be answered, not closed. l.mu is held.
func (l *capListener) victim(src netip.Prefix) (victim *capConn, starved bool) {
	held := func(c *capConn) int {
		if c.src == src {
			return l.held[c.src] + 1
		}
		return l.held[c.src]
	}
	now := clock()
	var cands []*capConn
	for c := range l.conns {
		if c.waiting != 0 || c.stalled.Load() || c.starved(now) {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil, false
	}
	// The source holding the most first, and its waiting connections
	// (oldest first) before its stalled or starved ones.
	order := func(c *capConn) uint64 {
		if c.waiting == 0 {
			return ^uint64(0)
		}
		return c.waiting
	}
	slices.SortFunc(cands, func(a, b *capConn) int {
		return cmp.Or(cmp.Compare(held(b), held(a)), cmp.Compare(order(a), order(b)))
	})
	most := cands[:1]
	for _, c := range cands[1:] {
		if held(c) < held(cands[0]) {
			break
		}
		most = append(most, c)
	}
	for _, c := range most {
		if c.waiting != 0 && !c.got.Load() && !pending(c.Conn) {
			return c, false
		}
	}
	for _, c := range most {
		if c.waiting == 0 {
			return c, !c.stalled.Load()
		}
	}
	return most[0], false
}

// starved reports whether the request c serves has waited stall for a
// body that does not come: a Read of it, by its handler or by the server
// after the handler's return, has got nothing for that long. now is
// clock's.
func (c *capConn) starved(now int64) bool {
	if b := c.body.Load(); b != 0 && now-b >= int64(stall) {
		return true
	}
	a, r := c.answered.Load(), c.reading.Load()
	return a != 0 && r >= a && now-r >= int64(stall)
}

// cutBody fails the Read of the body c's request waits for, and every
// Read after it, so that the request is answered (its body's read fails)
// and the server closes c after the answer; c is closed answerGrace
// later whatever comes of it.
func (c *capConn) cutBody() {
	c.cut.Store(true)
	c.Conn.SetReadDeadline(aLongTimeAgo)
	c.closer.Store(time.AfterFunc(answerGrace, func() { c.Close() }))
}

// remove forgets c; l.mu is held.
func (l *capListener) remove(c *capConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.held[c.src]--; l.held[c.src] == 0 {
		delete(l.held, c.src)
	}
}

// source is the address a connection comes from, as capListener counts
// them: an IPv6 client holds a /64 and can use any address in it.
func source(a net.Addr) netip.Prefix {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// connState is the server's ConnState: a connection back to idle between
// requests waits again.
func (l *capListener) connState(c net.Conn, s http.ConnState) {
	if cc, ok := c.(*capConn); ok && s == http.StateIdle {
		l.mark(cc, false)
	}
}

type connKey struct{}

// connContext is the server's ConnContext: it lets serving find the
// connection of a request.
func (l *capListener) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// serving marks the connection of each request as serving from the moment
// its handler starts until the connection is idle again, so a request in
// progress is never cut to make room, and watches the reads of its body
// (starved).
func (l *capListener) serving(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		cc, ok := r.Context().Value(connKey{}).(*capConn)
		if !ok {
			h.ServeHTTP(rw, r)
			return
		}
		l.mark(cc, true)
		defer func() { cc.answered.Store(clock()) }()
		if r.Body != nil && r.Body != http.NoBody {
			// A copy: the server's own request keeps its body, which it
			// looks at after the handler.
			r = r.WithContext(r.Context())
			r.Body = &watchedBody{ReadCloser: r.Body, c: cc}
		}
		h.ServeHTTP(rw, r)
	})
}

// watchedBody is a request's body whose reads its connection watches.
type watchedBody struct {
	io.ReadCloser
	c *capConn
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.c.body.Store(clock())
	defer b.c.body.Store(0)
	return b.ReadCloser.Read(p)
}

func (l *capListener) mark(cc *capConn, serving bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.conns[cc]; !ok {
		return // closed already
	}
	cc.answered.Store(0)
	if serving {
		cc.waiting = 0
		return
	}
	cc.got.Store(false)
	l.tick++
	cc.waiting = l.tick
}

// Read reads from the connection, noting that a request has begun, and
// when the read began (starved); it fails once the connection was cut
// (cutBody).
func (c *capConn) Read(b []byte) (int, error) {
	if c.cut.Load() {
		return 0, os.ErrDeadlineExceeded
	}
	c.reading.Store(clock())
	n, err := c.Conn.Read(b)
	c.reading.Store(0)
	if n > 0 {
		c.got.Store(true)
	}
	return n, err
}

// Write writes p in rounds of at most stall each (earlier if the server's
// own write deadline comes first), so that it sees whether the client
// takes anything: a round that writes nothing marks the connection
// stalled until the write takes something or returns. It returns, as a
// plain Write, when p is written, on an error, or at the server's deadline.
// One write at a time, as net/http's server writes. A connection that
// cannot go on after a deadline (rounds unset) is written plainly and is
// never taken for stalled.
func (c *capConn) Write(p []byte) (int, error) {
	if !c.rounds {
		return c.Conn.Write(p)
	}
	defer func() {
		c.stalled.Store(false)
		c.wmu.Lock()
		c.round = time.Time{}
		c.Conn.SetWriteDeadline(c.wdl)
		c.wmu.Unlock()
	}()
	done := 0
	for {
		c.wmu.Lock()
		c.round = time.Now().Add(stall)
		c.Conn.SetWriteDeadline(earliest(c.wdl, c.round))
		wdl := c.wdl
		c.wmu.Unlock()
		n, err := c.Conn.Write(p[done:])
		done += n
		if n > 0 {
			c.stalled.Store(false)
		}
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || (!wdl.IsZero() && !time.Now().Before(wdl)) {
			return done, err
		}
		if n == 0 {
			c.stalled.Store(true)
		}
	}
}

// resumable reports whether writes to c may go on after one reached its
// deadline: those of TCP and Unix sockets.
func resumable(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// SetWriteDeadline sets the deadline of its writes, as the server sees it
// (Write's rounds end earlier).
func (c *capConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wdl = t
	return c.Conn.SetWriteDeadline(earliest(t, c.round))
}

// SetDeadline sets its read deadline and SetWriteDeadline's.
func (c *capConn) SetDeadline(t time.Time) error {
	return errors.Join(c.Conn.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// earliest is the earlier of two deadlines, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Close closes the connection and frees its place; safe to call more than
// once and from any goroutine.
func (c *capConn) Close() error {
	c.once.Do(func() {
		if t := c.closer.Load(); t != nil {
			t.Stop()
		}
		c.l.mu.Lock()
		c.l.remove(c)
		c.l.mu.Unlock()
		c.err = c.Conn.Close()
	})
	return c.err
}
