package mcp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/conncap"
	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// Serving the gateway: Streamable HTTP (stateful, one go-sdk server per
// MCP session) and any go-sdk transport, stdio included.

// ServeHTTP serves MCP over Streamable HTTP (stateful: the Mcp-Session-Id
// the gateway assigns is the toolbus session), behind the bearer-token
// check when GatewayOptions.Tokens are set. Mount it at any path; MCP
// clients conventionally use /mcp.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// minTokenLen is the shortest bearer token NewGateway accepts (as
// auth.MinTokenLen, which a tokens file is read with).
const minTokenLen = 16

// verifyToken maps a bearer token to its identity (auth.TokenInfo.UserID,
// which the go-sdk also checks every request of a session against). It
// compares against every token in constant time.
func (g *Gateway) verifyToken(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	identity := ""
	for t, id := range g.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			identity = id
		}
	}
	if identity == "" {
		return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: identity}, nil
}

func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// The gateway's own: a client's is dropped.
	r.Header.Del(headerPost)
	s := g.sessionByID(r.Header.Get("Mcp-Session-Id"))
	if s == nil && g.answerGone(w, r) {
		return
	}
	if r.Method == http.MethodPost {
		// A POST the go-sdk refuses from its headers alone (gateway_refused.go)
		// is its to answer, before anything reads the body and without a
		// session made for it: base serves it (getServer).
		if g.refusedUnread(r, s) {
			g.http.ServeHTTP(w, r)
			return
		}
		// Ids the go-sdk would answer under others are refused before it
		// reads the body (gateway_ids.go).
		if !checkIDs(w, r) {
			return
		}
	}
	// Only the session's own identity acts on it: the go-sdk refuses
	// another's token below.
	if s != nil && s.identity == g.identityOf(r) {
		if r.Method == http.MethodPost {
			// Its requests' handlers find its context (postContext).
			defer s.post(r)()
		}
		defer s.request(g.opts.SessionTimeout, carriesCall(r))()
		if r.Method == http.MethodDelete && !g.sdkRefuses(r) {
			// The client ends its session: its calls in flight are
			// cancelled first (the go-sdk's close waits for them). Not
			// when the go-sdk answers the DELETE with an error: the
			// session stays, and its calls must go on.
			s.end(errSessionDeleted)
			g.delete(w, r, s)
			return
		}
	}
	if r.Header.Get("Mcp-Session-Id") == "" {
		if r.Method != http.MethodPost || discoverProbe(r) || !mayInitialize(r) {
			// No session can come of it (only a POST whose body holds an
			// initialize opens one; the go-sdk answers another method
			// without a session 400 or 405, and another POST with an error
			// or without a session): base answers it (getServer), without
			// a session made for it over the bus, and it does not count
			// toward MaxSessions.
			g.http.ServeHTTP(w, r)
			return
		}
		if g.isClosed() {
			// Else the go-sdk would answer it 200 with a JSON-RPC error and
			// the id of a session nobody holds (400 for a token's identity
			// not served yet): 503 tells a client to try later, when a
			// gateway may serve here again (goneText).
			http.Error(w, closedText, http.StatusServiceUnavailable)
			return
		}
		p := &pendingSession{}
		if n := g.opts.MaxSessions; n > 0 {
			if p.claim = g.makeRoom(g.sourceOf(r), n); p.claim == nil {
				open := fmt.Sprintf("%d sessions open", n)
				if n == 1 {
					open = "1 session open"
				}
				http.Error(w, "the gateway has "+open+", the most it takes, and no client holds two more than yours: end one (DELETE) or try later", http.StatusServiceUnavailable)
				return
			}
			// The session, if one opens, has taken it by now.
			defer g.unclaim(p.claim)
		}
		// A request that may open a session: getServer creates its server
		// once, however often the go-sdk handler asks.
		r = r.WithContext(context.WithValue(r.Context(), pendingKey{}, p))
	}
	g.http.ServeHTTP(w, r)
}

type pendingKey struct{}

// delete serves r, the DELETE that ends s. Once the go-sdk has closed
// the session (204) it is forgotten before the client has the answer, so
// that the client's next request with its id is told the session ended
// (answerGone) rather than served by the go-sdk, whose answer is a bare
// 404.
func (g *Gateway) delete(w http.ResponseWriter, r *http.Request, s *gatewaySession) {
	sw := &statusWriter{ResponseWriter: w}
	g.http.ServeHTTP(sw, r)
	if sw.status == http.StatusNoContent {
		g.untrack(s)
	}
}

// statusWriter notes the status of the response written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// carriesCall reports whether r, a request of a session, may carry a
// call's result: all but the session's own event stream, a GET without
// Last-Event-ID or one resuming that stream (the go-sdk numbers its
// events "_<n>", the stream's id being empty). A GET resuming a call's
// response stream ("<stream>_<n>") carries that call's result, and the
// go-sdk ends it once the stream's calls are answered. A Last-Event-ID
// the go-sdk cannot read it answers 400 at once.
func carriesCall(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return true
	}
	stream, _, _ := strings.Cut(r.Header.Get("Last-Event-ID"), "_")
	return stream != ""
}

// headerPost names, in a session's POST as its requests' handlers see it
// (sdk.RequestExtra.Header), the POST among the session's (post).
const headerPost = "Toolbus-Gateway-Post"

// post notes r, a POST of the session, so that the handlers of its
// requests find its context (postContext), until the returned func is
// called.
func (s *gatewaySession) post(r *http.Request) (done func()) {
	s.postMu.Lock()
	s.postSeq++
	token := strconv.FormatUint(s.postSeq, 36)
	r.Header.Set(headerPost, token)
	if s.posts == nil {
		s.posts = map[string]context.Context{}
	}
	s.posts[token] = r.Context()
	s.postMu.Unlock()
	return func() {
		s.postMu.Lock()
		delete(s.posts, token)
		s.postMu.Unlock()
	}
}

// postContext is the context of the POST that carried a request, when
// its answer can reach the client by that POST's stream only (the
// gateway keeps no events to resume it with, or the client's protocol
// version resumes no stream): its end (the connection cut) means nobody
// will read the answer. Nil otherwise. A POST noted once and gone by now
// (the go-sdk hands its requests over and returns when its connection
// goes, and a handler may run only after that) is an ended context: the
// POST of a request whose handler still runs does not end otherwise.
func (s *gatewaySession) postContext(extra *sdk.RequestExtra) context.Context {
	if extra == nil || extra.Header == nil || s.g.opts.StreamBuffer >= 0 && resumable(extra.Header) {
		return nil
	}
	token := extra.Header.Get(headerPost)
	if token == "" {
		return nil
	}
	s.postMu.Lock()
	defer s.postMu.Unlock()
	if ctx := s.posts[token]; ctx != nil {
		return ctx
	}
	return postGone
}

// postGone is the context of a POST that ended (postContext).
var postGone = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// sdkRefuses reports whether the go-sdk answers r, a request of a known
// session, with an error before it looks at what r asks: its DNS-rebinding
// guard (a request on a loopback address with a Host that is not one) or
// a protocol version it does not serve (one from 2026-07-28 it lets by).
func (g *Gateway) sdkRefuses(r *http.Request) bool {
	if !g.opts.DisableLocalhostProtection {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil && loopbackAddr(a.String()) && !loopbackAddr(r.Host) {
			return true
		}
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	return v != "" && v < "2026-07-28" && !slices.Contains(sdk.SupportedProtocolVersions(), v)
}

// loopbackAddr: a host, with or without a port, that is localhost or a
// loopback address, with or without a zone (as the go-sdk's guard reads
// it: "[::1%25lo]" is one).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	ip, err := netip.ParseAddr(host)
	return host == "localhost" || err == nil && ip.IsLoopback()
}

// discoverProbe reports whether r, without a session, is a server/discover
// request: the probe a client of protocol 2026-07-28 (the go-sdk's, for
// one) sends before it initializes. A stateful HTTP server cannot serve
// that protocol, so the go-sdk answers the probe with the older versions
// it serves and the client initializes; the session the go-sdk opens for
// the probe ends with the request. From 2026-07-28 a request names its
// method in Mcp-Method and the go-sdk refuses one whose body is another
// method (and any other call at those versions, on a stateful server), so
// a request this lets through that the go-sdk serves is a discover.
func discoverProbe(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "server/discover" &&
		r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28"
}

// listenerKey holds, in a request's context, the context ServeListener
// serves until.
type listenerKey struct{}

// identityOf is the caller identity an HTTP request acts as: its bearer
// token's, or the gateway's own.
func (g *Gateway) identityOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && len(g.opts.Tokens) > 0 {
		return ti.UserID
	}
	return g.copts.Identity
}

type pendingSession struct {
	once  sync.Once
	s     *gatewaySession
	claim *claim // makeRoom's, nil without a bound
}

func (g *Gateway) getServer(r *http.Request) *sdk.Server {
	p, _ := r.Context().Value(pendingKey{}).(*pendingSession)
	if p == nil {
		// A request of a known session (only its version is checked here),
		// a discover probe (discoverProbe) or another request without a
		// session that opens none (not a POST), which base answers.
		return g.base
	}
	p.once.Do(func() {
		p.s = g.newSession(r.Context(), newSessionID(), g.identityOf(r), g.sourceOf(r))
		if p.s != nil {
			p.s.claim = p.claim
		}
	})
	if p.s == nil {
		return nil // the identity's client could not be made: the go-sdk answers 400
	}
	return p.s.srv
}

// ListenAndServe serves Streamable HTTP on addr at /mcp until ctx ends,
// then shuts the listener down: it takes no new session or call (with
// GatewayOptions.StopGrace, only what serves the calls in flight until
// they end: gateway_stop.go), the calls in flight end interrupted (after
// StopGrace, if they have not finished by then), their clients get those
// results (for at most 5 s), then, after a grace of 200 ms for the
// clients to read them, the event streams end. It returns once the
// server has stopped.
func (g *Gateway) ListenAndServe(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp: gateway: %w", err)
	}
	return g.ServeListener(ctx, l)
}

// ServeListener is ListenAndServe on a listener the caller opened (for
// example on port 0, to learn the address first). It closes l.
func (g *Gateway) ServeListener(ctx context.Context, l net.Listener) error {
	// The calls of the sessions opened here end with ctx (interrupted),
	// or StopGrace after it, and the requests that carry them outlive ctx
	// until they have handed those results to the clients; only then do
	// the event streams that carry no call (a session's own, resumed or
	// not: carriesCall) end, since a client may take a lost stream for a
	// lost session and fail its calls.
	reqs, endReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer endReqs()
	streams, endStreams := context.WithCancel(reqs)
	defer endStreams()
	// The calls end with ctx, or StopGrace after it.
	calls, endCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer endCalls()
	var carrying atomic.Int64 // requests that may carry a call's result
	var polled polledStreams  // calls' streams closed for polling, not yet resumed
	var stopping atomic.Bool  // in the stop grace (gateway_stop.go)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w, r = g.bounded(w, r)
		if stopping.Load() {
			var ok bool
			if r, ok = servedStopping(w, r); !ok {
				return
			}
		}
		if !carriesCall(r) {
			rctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(streams, cancel)()
			r = r.WithContext(rctx)
		} else {
			carrying.Add(1)
			defer carrying.Add(-1)
			w = newPollWatch(w, r, &polled)
		}
		g.ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: gatewayHeaderTimeout, IdleTimeout: g.idleTimeout,
		BaseContext: func(net.Listener) context.Context { return context.WithValue(reqs, listenerKey{}, calls) }}
	if n := g.opts.MaxConns; n > 0 {
		l = conncap.Cap(hs, l, n) // the operator endpoint's rules
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("mcp: gateway: %w", err)
	case <-ctx.Done():
	}
	// Shutdown gets up to StopGrace for the calls, then resultWait for
	// their results (rctx).
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shut := make(chan error, 1)
	shutdown := func() { go func() { shut <- hs.Shutdown(sctx) }() } // no new connections nor requests; waits for the requests
	grace := g.opts.StopGrace
	if grace > 0 {
		// The listener stays open for the clients of the calls in flight
		// (a stream closed for polling is resumed on a new connection),
		// taking only what serves those calls (servedStopping); the other
		// connections close once idle.
		stopping.Store(true)
		hs.SetKeepAlivesEnabled(false)
	} else {
		shutdown()
	}
	// A call is in flight while a request may carry its result, or its
	// stream, closed for polling, awaits its client's resume (which only
	// an open listener takes).
	inFlight := func() bool { return carrying.Load() > 0 || grace > 0 && polled.awaiting() }
	waited := false
	if grace > 0 {
		// The calls in flight may finish: their requests return once
		// answered.
		over := time.NewTimer(grace)
		for inFlight() && !fired(over) {
			waited = true
			time.Sleep(10 * time.Millisecond)
		}
		over.Stop()
	}
	endCalls()
	rctx, cancelResults := context.WithTimeout(context.Background(), g.resultWait)
	defer cancelResults()
	defer context.AfterFunc(rctx, cancel)()
	// Then a grace (streamEndGrace) before the event streams end: a
	// client reads the result such a request wrote on a connection of its
	// own, and one without retries that sees its event stream end first
	// takes it for a lost session, failing the call it has not read yet
	// (the go-sdk's client checks for a failed connection before it reads
	// a message waiting). Ended at the request's return itself, the
	// streams ended first for most such clients; after a 10 ms poll's lag
	// alone, for some on a loaded machine
	// (TestGatewayServeListenerEndInFlight). Only the client can close
	// that race; the grace narrows it.
	for inFlight() && rctx.Err() == nil {
		waited = true
		time.Sleep(10 * time.Millisecond)
	}
	if waited {
		select {
		case <-time.After(streamEndGrace):
		case <-rctx.Done():
		}
	}
	if grace > 0 {
		shutdown()
	}
	endStreams()
	err := <-shut
	if err != nil {
		endReqs()
		err = hs.Close()
	}
	<-errc
	return err
}

// fired reports whether t has fired.
func fired(t *time.Timer) bool {
	select {
	case <-t.C:
		return true
	default:
		return false
	}
}

// The bounds ServeListener puts on a client's connection. The server's
// own ReadTimeout and WriteTimeout cannot be used: they bound the whole
// request (its context ends with the first), and an event stream lasts as
// long as its session or call.
const (
	// gatewayHeaderTimeout bounds the reading of a request's headers.
	gatewayHeaderTimeout = 10 * time.Second
	// defaultGatewayBodyTimeout bounds the reading of a request's body
	// (4 MiB at most, the go-sdk's bound): a body trickled slower is cut,
	// answered 408 (checkIDs). At MaxConns one that has not come for 2 s
	// is cut sooner, when its place is needed (conncap.Cap).
	defaultGatewayBodyTimeout = 30 * time.Second
	// defaultGatewayWriteTimeout bounds one write of a response: a client
	// that reads nothing for that long is cut, the events it missed kept
	// for its Last-Event-ID (GatewayOptions.StreamBuffer), and the call
	// that was writing goes on.
	defaultGatewayWriteTimeout = 30 * time.Second
	// defaultGatewayIdleTimeout closes a kept-alive connection without a
	// request for that long.
	defaultGatewayIdleTimeout = 2 * time.Minute
	// streamEndGrace is how long ServeListener's shutdown lets the clients
	// of the requests that carried calls' results read them before their
	// event streams end (see ServeListener).
	streamEndGrace = 200 * time.Millisecond
)

// bounded gives a POST's body a read deadline of g.bodyTimeout, lifted
// once the body has been read, and w a write deadline of g.writeTimeout
// on each write, lifted after it. Only a POST's body is read: another
// request announcing one (a GET, a DELETE) is served without it, and its
// connection closed after. net/http would read up to 256 KB of it, for
// keep-alive, until the body timeout, the connection meanwhile serving a
// request, a place MaxConns never takes: MaxConns GETs announcing bodies
// never sent held every place, as on the operator endpoint (opshttp).
func (g *Gateway) bounded(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	rc := http.NewResponseController(w)
	switch {
	case r.Body == nil || r.Body == http.NoBody:
	case r.Method != http.MethodPost:
		// Reading the body fails at once: net/http answers with
		// "Connection: close" and closes the connection.
		rc.SetReadDeadline(time.Now())
	default:
		rc.SetReadDeadline(time.Now().Add(g.bodyTimeout))
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
	}
	return &deadlineWriter{ResponseWriter: w, rc: rc, d: g.writeTimeout}, r
}

// deadlineBody lifts its connection's read deadline at the body's end:
// the server then waits for the next request, or for the client to go
// away, without one. After a timeout it stays, so the server's discarding
// of the rest of the body is bounded too.
type deadlineBody struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter bounds each write and flush of a response by d: a client
// not reading cannot hold the writer (a call's goroutine, the session's
// stream) for ever. A write that times out fails the connection, and the
// server cancels the request.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.d))
	defer w.rc.SetWriteDeadline(time.Time{})
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) FlushError() error {
	w.rc.SetWriteDeadline(time.Now().Add(w.d))
	defer w.rc.SetWriteDeadline(time.Time{})
	return w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeStdio serves one MCP session on the process's stdin and stdout
// until the client goes away or ctx ends. session is the toolbus session
// the MCP session is; "" means a new random one. Give the same session to
// later processes to keep its group activation.
func (g *Gateway) ServeStdio(ctx context.Context, session string) error {
	return g.Serve(ctx, &sdk.StdioTransport{}, session)
}

// Serve serves one MCP session on any go-sdk transport (ServeStdio uses
// sdk.StdioTransport), as ServeStdio does. When ctx ends, the session's
// calls in flight are cancelled (on the bus too) and the session closes:
// its client gets an error for them, since the go-sdk writes nothing once
// a session closes. To hand clients the interrupted results first, call
// Interrupt and let the results be written before ctx ends.
func (g *Gateway) Serve(ctx context.Context, t sdk.Transport, session string) error {
	if session == "" {
		session = newSessionID()
	}
	s := g.newSession(ctx, session, g.copts.Identity, "")
	if s == nil {
		return errors.New("mcp: gateway closed")
	}
	// ctx is to this session what ServeListener's is to its sessions: its
	// end cancels the calls in flight, else the close below would wait for
	// them (the go-sdk closes a session once its requests have returned).
	s.listener = ctx
	ss, err := s.srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: gateway: %w", err)
	}
	if err := g.track(s, ss); err != nil {
		ss.Close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { ss.Close() })
	defer stop()
	err = ss.Wait()
	if ctx.Err() != nil || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	return err
}

// sessionInstructions are what a session's initialize answers as its
// instructions: GatewayOptions.Instructions, then (as 1.x
// get_activated_notes) the instructions of the session's active groups,
// then the skills prompt of basic and those groups. They are the
// session's at initialize: MCP has no notification for new ones, so a
// later reset_tools tells the model in its reply instead.
func (g *Gateway) sessionInstructions(ctx context.Context, c *bus.Client, session string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	parts := []string{g.opts.Instructions}
	active, err := c.ActiveGroups(ctx, session, 0)
	if err != nil {
		g.log.Warn("mcp: gateway: reading a new session's groups for its instructions", "session", session, "err", err)
		return g.opts.Instructions
	}
	parts = append(parts, toolkit.ActivatedInstructions(g.fleet.Groups(), active), skill.FleetInstructions(g.fleet, active))
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "\n\n")
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (g *Gateway) newServer(id string, s *gatewaySession, instructions string) *sdk.Server {
	opts := &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       g.sdkLog,
		// Advertise tools (with list changes) even while the list is empty.
		// Logging: tools' log messages (toolkit.Log) reach the client.
		// Prompts and resources: the skills the session sees and those of
		// the fleet's mounted MCP servers (subscriptions to their updates).
		// Completions: those of the mounted servers' prompts and resource
		// templates (gateway_mounted.go). The same for base (s nil), which
		// answers discover probes for the sessions to come.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}, Logging: &sdk.LoggingCapabilities{},
			Prompts: &sdk.PromptCapabilities{ListChanged: true}, Resources: &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Completions: &sdk.CompletionCapabilities{}},
	}
	if id != "" {
		opts.GetSessionID = func() string { return id }
	}
	if s != nil {
		opts.CompletionHandler = s.complete
		opts.SubscribeHandler, opts.UnsubscribeHandler = s.subscribe, s.unsubscribe
	}
	srv := sdk.NewServer(g.opts.Implementation, opts)
	if s != nil {
		srv.AddReceivingMiddleware(s.middleware)
	} else {
		srv.AddReceivingMiddleware(refuseInitialize)
	}
	return srv
}

// newSession creates a session's server with its current tools, calling
// as identity, counting toward source's share of MaxSessions ("": none);
// nil when the gateway is closed. Nobody is connected yet, so filling it
// sends no notification.
func (g *Gateway) newSession(ctx context.Context, id, identity, source string) *gatewaySession {
	c, err := g.clientFor(identity)
	if err != nil {
		g.log.Warn("mcp: gateway: no session", "identity", identity, "err", err)
		return nil
	}
	s := &gatewaySession{g: g, id: id, identity: identity, source: source, c: c, tools: map[string]string{}, skills: map[string]string{},
		updates: newUpdateQueue()}
	// Not under the gateway's context: a session that never connects is
	// only garbage, not a child that context keeps.
	s.ctx, s.end = context.WithCancelCause(context.Background())
	s.listener, _ = ctx.Value(listenerKey{}).(context.Context)
	s.srv = g.newServer(id, s, g.sessionInstructions(ctx, c, id))
	s.refresh(ctx, true, 0)
	return s
}
