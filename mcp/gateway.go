package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

// The gateway's life: construction, the goroutines that keep sessions'
// tool lists current, and Close. Serving (HTTP, stdio) is in
// gateway_serve.go, one session's listing and calls in gateway_session.go,
// the conversion of results in gateway_result.go.

// DefaultGatewaySessionTimeout closes an HTTP session of the gateway that
// has had no request for that long.
const DefaultGatewaySessionTimeout = 30 * time.Minute

// DefaultGatewayMaxSessions is the default of GatewayOptions.MaxSessions.
const DefaultGatewayMaxSessions = 1024

// DefaultGatewayMaxConns is the default of GatewayOptions.MaxConns.
const DefaultGatewayMaxConns = 4096

// DefaultGatewayMaxSessionCalls is the default of
// GatewayOptions.MaxSessionCalls.
const DefaultGatewayMaxSessionCalls = 256

// DefaultGatewayMaxCalls is the default of GatewayOptions.MaxCalls.
const DefaultGatewayMaxCalls = 4096

// DefaultGatewayStreamBuffer is the default of
// GatewayOptions.StreamBuffer: 10 MiB of stream events across sessions.
const DefaultGatewayStreamBuffer = 10 << 20

// GatewayStreamRetry is how long a client waits before resuming a stream
// GatewayOptions.StreamPoll closed.
const GatewayStreamRetry = 100 * time.Millisecond

// gatewaySyncTimeout bounds one refresh of a session's tool list.
const gatewaySyncTimeout = 10 * time.Second

// Keys of a gateway result's _meta.
const (
	// GatewayMetaState is the toolbus final state (success, error,
	// interrupted, denied).
	GatewayMetaState = "toolbus/state"
	// GatewayMetaCode is the toolbus error code of a failed call.
	GatewayMetaCode = "toolbus/code"
	// GatewayMetaMetadata is the final response's metadata (the worker
	// id and whatever the tool added), without structured_content.
	GatewayMetaMetadata = "toolbus/metadata"
	// GatewayMetaSession is the toolbus session of the call: the MCP
	// session id (over HTTP) or the gateway's stdio session.
	GatewayMetaSession = "toolbus/session"
)

// metaStructuredContent is the metadata key the client side stores an MCP
// server's structuredContent under; the gateway gives it back as
// structuredContent.
const metaStructuredContent = "structured_content"

// GatewayOptions configure NewGateway. A nil *GatewayOptions means the
// defaults.
type GatewayOptions struct {
	// Implementation is announced to MCP clients; nil means toolbus.
	Implementation *sdk.Implementation
	// Instructions are sent to MCP clients when they initialize, first:
	// a session's instructions go on with those of its active groups and
	// the skills prompt of the skills it sees (see sessionInstructions).
	Instructions string
	// Client configures the bus client the listings and calls go
	// through: its GroupsBucket must be the bucket the workers use, its
	// Filter (permission.ListFilter) narrows what sessions see.
	Client *bus.ClientOptions
	// KVReplicas are the replicas of the group-state bucket when the
	// gateway creates it (started before any worker): 1 to 5, 0 means 1,
	// as a worker's --kv-replicas. Give the workers' value (3 on a 3-node
	// cluster): a bucket keeps the replicas it was made with, so one made
	// with 1 is lost with its node whatever the workers say later. A
	// bucket that exists is bound as it is.
	KVReplicas int
	// CallTimeout bounds every call; 0 means no bound beyond the MCP
	// client's own cancellation.
	CallTimeout time.Duration
	// SessionTimeout closes an HTTP session without a request open for
	// that long (its calls in flight end with GatewayIdleClosedText); 0
	// means DefaultGatewaySessionTimeout, negative means never.
	SessionTimeout time.Duration
	// MaxSessions bounds the HTTP sessions open at once: each holds a
	// server with the session's tools until it ends (its DELETE, or
	// SessionTimeout without a request), so a client opening sessions in
	// a loop would fill the gateway's memory. Each source (the bearer
	// token's identity with Tokens, else the peer's IPv4 address or IPv6
	// /64; never X-Forwarded-For) has a fair share: at the bound, an
	// initialize from a source holding at least two sessions fewer than
	// the source holding the most ends that source's least recently used
	// session (one without a call in flight first; the calls of one with
	// calls end with GatewayMadeRoomText) and opens; any other
	// is answered 503 (a server/discover probe, which opens no session,
	// is answered still). So one client may use the whole bound while
	// nobody else needs it, and cannot lock others out. 0 means
	// DefaultGatewayMaxSessions, negative means no bound.
	MaxSessions int
	// MaxConns bounds the connections ServeListener (and ListenAndServe)
	// hold at once, so that clients opening connections and sending
	// nothing cost the gateway that many file descriptors at most, not
	// the ones its NATS connection needs. It keeps accepting: a
	// connection that arrives at the bound takes the place of one without
	// a request in progress (one of the source, address or IPv6 /64,
	// holding the most; one that has sent nothing first, then the one that
	// has waited longest), or of one whose answer's write has taken
	// nothing for 2 s (its client reads nothing, or only a few KB/s), or
	// of a POST whose body has not come for 2 s (its client sends
	// nothing of it; the POST is answered, 408 when the gateway was
	// reading its body, and its connection closed),
	// so a flood closes its own connections. A request in progress whose
	// client reads and sends, an event stream and a body that comes
	// slowly (a byte a second) included, is never cut; when every
	// held connection is serving one, a new connection is closed at once. Each session's client commonly holds two (its event stream
	// and a request), so keep it above twice MaxSessions, and below the
	// process's file limit. 0 means DefaultGatewayMaxConns, negative
	// means no bound. A Gateway mounted as an http.Handler in a server of
	// your own has the bounds that server sets.
	MaxConns int
	// MaxSessionCalls bounds the requests one session runs at once that
	// reach the fleet: tools/call, and the resource, prompt and
	// completion requests (resources/list, resources/templates/list,
	// resources/read, resources/subscribe, prompts/list, prompts/get,
	// completion/complete), all counted together. A call past it ends at
	// once, code overloaded; another request is answered at once with a
	// JSON-RPC error; both say TooManyCallsError and name the bound. So
	// one client (or one JSON-RPC batch of an old protocol version:
	// thousands of requests fit in one request body) cannot send the fleet
	// as many requests as it likes. 0 means DefaultGatewayMaxSessionCalls,
	// negative means no bound.
	MaxSessionCalls int
	// MaxCalls bounds the requests all sessions together run at once that
	// reach the fleet (those MaxSessionCalls counts), with the same
	// refusal: a call past it ends at once, code overloaded, another
	// request is answered at once with a JSON-RPC error, both saying
	// TooManyCallsError and naming the gateway's bound. Without it the
	// sessions' bounds alone let one gateway hold MaxSessions ×
	// MaxSessionCalls requests (262,144 by default), each a goroutine with
	// its JSON-RPC request and its input held (up to the NATS maximum
	// payload, encoded and decoded): gigabytes, and as many requests sent
	// to the fleet. A request refused by either bound counts toward
	// neither, not even while it is answered (OnCall runs for it): one
	// session at its own bound does not crowd the others out. 0 means
	// DefaultGatewayMaxCalls, negative means no bound.
	MaxCalls int
	// DisableLocalhostProtection turns off the go-sdk's DNS-rebinding
	// guard (a request on a loopback address with a non-loopback Host
	// header gets 403); needed behind a reverse proxy on the same host.
	DisableLocalhostProtection bool
	// Logger receives skipped tools and failed refreshes, and the go-sdk's
	// warnings and errors: at most 100 of the go-sdk's lines a second
	// (a client causes some at will, one per message it sends), the next
	// one passed counting those left out ("suppressed"). Nil means
	// slog.Default().
	Logger *slog.Logger
	// Tokens admit HTTP clients by bearer token (the go-sdk's
	// auth.RequireBearerToken): token → the caller identity its sessions
	// call as (bus.ClientOptions.Identity), so their sessions, replies and
	// cancels are that identity's. With tokens, a request without a known
	// token gets 401, and a session answers only requests with the token
	// of the identity that opened it. Nil means no authentication (and
	// every HTTP session calls as Client.Identity); an empty, non-nil map
	// admits no HTTP client. Stdio sessions always call as
	// Client.Identity.
	Tokens map[string]string
	// OnCall, when set, is told of every tools/call the gateway answered:
	// the tool, how it ended and how long it took. It must not block;
	// metrics use it.
	OnCall func(tool string, state toolkit.State, code toolkit.Code, took time.Duration)
	// ExposeServers names MCP servers mounted on the fleet's workers whose
	// tools the gateway lists under their own names (tool, not
	// mcp__<server>__<tool>): the gateway is then a horizontally scaled
	// proxy of those servers (every worker mounting one serves its calls).
	// A name that would collide with another listed tool keeps its
	// prefixed form.
	ExposeServers []string
	// Approve, when set, records a person's approval of a call that ended
	// approval_required (permission.Guard.Approve: session scope, call
	// id, who): the gateway then asks MCP clients that take elicitations
	// for the approval and re-sends the call when they accept, instead of
	// ending it approval_required. Nil leaves such calls as they are.
	Approve func(ctx context.Context, scope, callID, by string) error
	// Deny, when set, records a person's refusal of such a call
	// (permission.Guard.Deny: session scope, call id, who, why): a
	// "decline" to the gateway's prompt is recorded through it, so the
	// call is no longer pending (toolctl pending), and sent again under
	// its id it ends denied without asking. A prompt dismissed ("cancel")
	// decides nothing: the call stays pending, for the prompt of its next
	// sending or toolctl approve/deny. Nil records nothing: a decline
	// only ends the call denied.
	Deny func(ctx context.Context, scope, callID, by, reason string) error
	// StreamBuffer bounds the memory (bytes) of the events the gateway
	// keeps so an HTTP client whose stream broke can resume it with
	// Last-Event-ID (SEP-1699): every response stream starts with a
	// priming event and a call's result is not lost with its connection.
	// 0 means DefaultGatewayStreamBuffer; negative keeps nothing (no
	// resumption, and no StreamPoll).
	StreamBuffer int
	// StreamPoll, when positive, closes the HTTP response stream of a
	// tools/call still running after that long (SEP-1699 polling), asking
	// the client to reconnect (SSE retry GatewayStreamRetry) and resume
	// with Last-Event-ID; the result comes on the resumed stream. It frees
	// the POST of a long call (proxies that cut long requests), once per
	// call: clients take a second close of a resumed stream for the end of
	// the call. Needs StreamBuffer; only clients on protocol versions with
	// resumable streams (2025-11-25 up to 2026-07-28) are polled, others
	// keep their stream.
	StreamPoll time.Duration
	// StopGrace is how long ServeListener (and ListenAndServe), once its
	// context ends, lets the calls in flight of its sessions finish before
	// it interrupts them (GatewayStoppedText). A call whose response
	// stream StreamPoll closed is in flight until its client resumes the
	// stream. Meanwhile the listener stays open for those calls' clients:
	// it serves a call's stream resumed with Last-Event-ID, a session's
	// POST of answers, notifications and pings only (an answer to a
	// call's elicitation, a keepalive) and a session's DELETE, answers
	// anything else 503 (a
	// new session, a new call), and closes each connection once answered.
	// 0 interrupts them at once, the listener closed. Interrupt and Close
	// still interrupt them at once.
	StopGrace time.Duration
	// Tracer, when set, records each tools/call as a server span,
	// "tools/call <tool>" ("tools/call" alone for a name the fleet does
	// not serve, which the client made up); the trace an MCP client sends (W3C headers, or _meta) continues over
	// the bus either way.
	Tracer trace.Tracer
}

// Gateway is an MCP server whose tools are the fleet's: every MCP session
// is a toolbus session, it lists the tools its active groups allow
// (reset_tools included when the fleet has groups) exactly as
// bus.Client.SessionSchemas lists them, is told
// notifications/tools/list_changed when that changes, and its tools/call
// requests go over the bus.
//
// Serve it over Streamable HTTP (a Gateway is an http.Handler; see also
// ListenAndServe) or stdio (ServeStdio). Over HTTP, a POST whose JSON-RPC
// ids the go-sdk would answer under other ids is refused whole, HTTP 400
// with a JSON-RPC Invalid Request (-32600, id null) naming the id: a
// numeric id that is not an integer (1.5; 1.0 and 1e2 are integers) or
// beyond ±2^53, and two requests of one batch (protocol 2025-03-26) with
// the same id (1 and 1.0 are the same), of which the go-sdk answers one
// (gateway_ids.go). So is a batch of more than 1024 messages (maxBatch),
// naming the bound: MaxSessionCalls counts only requests that reach the
// fleet, and the go-sdk decodes and holds every message of a batch and
// handles each ping on a goroutine of its own, so a 4 MiB body of some
// 70,000 pings or notifications cost the gateway that much for one POST.
// A request whose id repeats one of its session's
// requests still in flight (sent in another POST; MCP wants a session's
// ids unique among those) the go-sdk refuses, HTTP 400 with a JSON-RPC
// Invalid Request under that id; the request in flight goes on, answered
// on its own POST, a notifications/cancelled of the id cancels it alone,
// and once it is answered the id is free again. The gateway keeps no
// bookkeeping of its own by JSON-RPC id (the requests it sends mounted
// servers, and cancels, carry ids it makes).
//
// All methods are safe for concurrent use. Every goroutine the gateway
// starts runs under its lifetime context and is awaited by Close.
type Gateway struct {
	opts    GatewayOptions
	log     *slog.Logger
	sdkLog  *slog.Logger     // the go-sdk's own log: warnings and errors only, sdkLogPerSecond a second
	client  *bus.Client      // Client.Identity's: stdio, and HTTP without tokens
	fleet   *discovery.Fleet // the client's
	copts   bus.ClientOptions
	nc      *nats.Conn
	handler http.Handler // the HTTP handler, behind the bearer-token check with Tokens
	http    *sdk.StreamableHTTPHandler
	base    *sdk.Server // answers the HTTP handler's per-request version check, and discover probes
	unwatch func()
	groups  jetstream.KeyValue
	watcher jetstream.KeyWatcher // the group-state bucket's updates; owned by watchGroups once it runs
	// reconnected signals the connection is back: the watcher is made
	// again (nats.go does not always bring one back after a reconnect).
	reconnected chan nats.Status
	changed     chan struct{}
	ctx         context.Context // the gateway's lifetime: cancelled by Close
	cancel      context.CancelFunc
	// calls ends the sessions' calls: a child of ctx, cancelled by
	// Interrupt too.
	calls     context.Context
	interrupt context.CancelFunc
	wg        sync.WaitGroup // every goroutine the gateway starts
	// closeOnce runs Close's shutdown once, closeErr its error: a later
	// Close waits for it and returns that.
	closeOnce sync.Once
	closeErr  error
	updates   *nats.Subscription // the fleet's resource updates (gateway_mounted.go)

	mu       sync.Mutex
	sessions map[*gatewaySession]*sdk.ServerSession
	byID     map[string]*gatewaySession // the HTTP sessions, by MCP session id
	clients  map[string]*bus.Client     // by identity, for Tokens
	closed   bool
	// claims are the initializes makeRoom admitted whose sessions are not
	// tracked yet, by source; claimed their sum.
	claims  map[string]int
	claimed int
	// gone are the HTTP sessions that ended for a reason a client is
	// told, by id, at most maxGone of them, so that a client coming back
	// is told why (gateway_gone.go); goneBySource the same by source,
	// oldest first (goneSeq numbers them), the oldest of the source
	// holding the most forgotten first.
	gone         map[string]goneSession
	goneBySource map[string][]goneEntry
	goneSeq      uint64
	// calling counts the sessions' requests running that reach the
	// fleet, all sessions together (GatewayOptions.MaxCalls,
	// gatewaySession.enter); callMu guards it and every session's
	// calling, so that a request takes its places under both bounds, or
	// neither, in one step.
	callMu  sync.Mutex
	calling int
	// uses counts the starts and ends of sessions' requests: the order in
	// which makeRoom finds the least recently used.
	uses atomic.Uint64
	// bodyTimeout, writeTimeout, idleTimeout: ServeListener's bounds on a
	// client (gateway_serve.go).
	bodyTimeout, writeTimeout, idleTimeout time.Duration
	// resultWait bounds how long the results of calls the gateway ended
	// may take to be handed over before what carries them is closed:
	// ServeListener's shutdown, Close and a session closed for the
	// gateway's bounds (defaultResultWait).
	resultWait time.Duration
	// sdkLimit bounds sdkLog's lines (sdkLogPerSecond).
	sdkLimit *lineLimit
}

// NewGateway builds a gateway on nc: a bus client for the listings and
// calls, and a watch on the group-state bucket (created when missing,
// with GatewayOptions.KVReplicas replicas) for activations made
// elsewhere. Close releases them; nc stays open.
func NewGateway(ctx context.Context, nc *nats.Conn, opts *GatewayOptions) (*Gateway, error) {
	if nc == nil {
		return nil, errors.New("mcp: NewGateway needs a NATS connection")
	}
	var o GatewayOptions
	if opts != nil {
		o = *opts
	}
	if o.Implementation == nil {
		o.Implementation = &sdk.Implementation{Name: "toolbus", Version: "1"}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CallTimeout < 0 {
		return nil, fmt.Errorf("mcp: NewGateway: negative call timeout %v", o.CallTimeout)
	}
	if o.KVReplicas < 0 || o.KVReplicas > 5 {
		return nil, fmt.Errorf("mcp: NewGateway: the group-state bucket's replicas must be 1 to 5, got %d", o.KVReplicas)
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultGatewaySessionTimeout
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultGatewayMaxSessions
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultGatewayMaxConns
	}
	if o.MaxSessionCalls == 0 {
		o.MaxSessionCalls = DefaultGatewayMaxSessionCalls
	}
	if o.MaxCalls == 0 {
		o.MaxCalls = DefaultGatewayMaxCalls
	}
	var copts bus.ClientOptions
	if o.Client != nil {
		copts = *o.Client
	}
	if copts.Logger == nil {
		copts.Logger = o.Logger
	}
	if copts.GroupsBucket == "" {
		copts.GroupsBucket = wire.BucketGroups
	}
	for _, id := range o.Tokens {
		if !wire.ValidIdentity(id) {
			return nil, fmt.Errorf("mcp: NewGateway: a token maps to the invalid identity %q: it must be 1-%d characters of [A-Za-z0-9_-]", id, wire.MaxCallIDLen)
		}
	}
	for token := range o.Tokens {
		if len(token) < minTokenLen {
			return nil, fmt.Errorf("mcp: NewGateway: a bearer token of %d characters is too easy to guess: use at least %d", len(token), minTokenLen)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("mcp: gateway: %w", err)
	}
	groups, err := kv.OpenBounded(ctx, js, bus.GroupsBucketConfig(&bus.KVStateOptions{Bucket: copts.GroupsBucket, Replicas: o.KVReplicas}), bus.MaxSessionsFor(0))
	if err != nil {
		return nil, fmt.Errorf("mcp: gateway: group state: %w", err)
	}
	client, err := bus.NewClient(nc, &copts)
	if err != nil {
		return nil, fmt.Errorf("mcp: gateway: %w", err)
	}
	fleet, err := client.Fleet(ctx)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("mcp: gateway: %w", err)
	}
	g := &Gateway{
		opts: o, log: o.Logger, client: client, fleet: fleet, copts: copts, nc: nc,
		sdkLimit: &lineLimit{now: time.Now},
		changed:  make(chan struct{}, 1),
		sessions: map[*gatewaySession]*sdk.ServerSession{},
		byID:     map[string]*gatewaySession{},
		clients:  map[string]*bus.Client{copts.Identity: client},
	}
	g.sdkLog = slog.New(limited{minLevel{o.Logger.Handler(), slog.LevelWarn}, g.sdkLimit})
	g.bodyTimeout, g.writeTimeout, g.idleTimeout = defaultGatewayBodyTimeout, defaultGatewayWriteTimeout, defaultGatewayIdleTimeout
	g.resultWait = defaultResultWait
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.calls, g.interrupt = context.WithCancel(g.ctx)
	g.base = g.newServer("", nil, g.opts.Instructions)
	// The sessions' idle close is the gateway's (gatewaySession.request):
	// the go-sdk's SessionTimeout counts POSTs only, and would close the
	// session of a client that listens on its event stream.
	hopts := &sdk.StreamableHTTPOptions{
		DisableLocalhostProtection: o.DisableLocalhostProtection,
		Logger:                     g.sdkLog,
		MaxRequestBodyBytes:        gatewayMaxBody,
	}
	if o.StreamBuffer >= 0 {
		store := sdk.NewMemoryEventStore(nil)
		store.SetMaxBytes(cmp.Or(o.StreamBuffer, DefaultGatewayStreamBuffer))
		hopts.EventStore = store
	}
	g.http = sdk.NewStreamableHTTPHandler(g.getServer, hopts)
	g.handler = http.HandlerFunc(g.serveHTTP)
	if o.Tokens != nil {
		g.handler = auth.RequireBearerToken(g.verifyToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(g.handler)
	}
	g.groups = groups
	g.reconnected = nc.StatusChanged(nats.CONNECTED)
	if g.watcher, err = groups.WatchAll(g.ctx, jetstream.UpdatesOnly()); err != nil {
		nc.RemoveStatusListener(g.reconnected)
		g.cancel()
		client.Close()
		return nil, fmt.Errorf("mcp: gateway: watching the group state: %w", err)
	}
	if g.updates, err = g.relayUpdates(); err != nil {
		g.watcher.Stop()
		nc.RemoveStatusListener(g.reconnected)
		g.cancel()
		client.Close()
		return nil, fmt.Errorf("mcp: gateway: subscribing to resource updates: %w", err)
	}
	g.unwatch = fleet.OnChange(g.signal)
	g.goroutine(g.loop)
	g.goroutine(g.watchGroups)
	return g, nil
}

// goroutine runs fn on a goroutine Close waits for.
func (g *Gateway) goroutine(fn func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn()
	}()
}

// Sessions reports the MCP sessions connected now.
func (g *Gateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}

// Fleet returns the discovery view the gateway lists tools from.
func (g *Gateway) Fleet() *discovery.Fleet { return g.fleet }

// GatewayStoppedText is the chunk text that ends a call interrupted
// because the gateway serving it stopped: its Interrupt, its Close, or
// the end of the listener or stdio session the call came through. The
// worker's own text, toolkit.InterruptedText, would tell the model that
// the user stopped it.
const GatewayStoppedText = "<system-reminder>The tool call has been interrupted because the MCP gateway serving it shut down.</system-reminder>"

// GatewayIdleClosedText and GatewayMadeRoomText are the chunk texts that
// end a call interrupted because the gateway closed its session for its
// own bounds, in place of toolkit.InterruptedText as GatewayStoppedText
// is: the session had no request open for GatewayOptions.SessionTimeout
// (its client gone mid-call, and its stream not resumed since), or it
// was ended to make room for another source's session under
// GatewayOptions.MaxSessions. The gateway closes such a session once the
// results of its calls are written (for at most 5 s), so a client whose
// call's POST is still open gets that result; an idle session's client
// has no request open to get it by, and the gateway's warning for the
// call carries it. A client that comes back with such a session's id is
// answered 404 (as MCP wants for an ended session) saying why, as is one
// whose session its DELETE or Close ended.
const (
	GatewayIdleClosedText = "<system-reminder>The tool call has been interrupted because the MCP gateway closed its session, idle for longer than the gateway's session timeout.</system-reminder>"
	GatewayMadeRoomText   = "<system-reminder>The tool call has been interrupted because the MCP gateway closed its session to make room for another client's session.</system-reminder>"
)

// Interrupt ends every call in flight, interrupted (on the bus too), and
// every later one at once, leaving the sessions open so that the calls'
// results reach their clients: a server that stops calls it, lets the
// results be written, then closes.
func (g *Gateway) Interrupt() { g.interrupt() }

// Close ends every MCP session, stops listening to the fleet and waits
// for the gateway's goroutines. It does not close the NATS connection.
// The calls in flight end first, interrupted with GatewayStoppedText (as
// by Interrupt), and the HTTP sessions are closed once the requests that
// may carry their results have returned, for at most 5 s, so that a
// client whose call's POST is open gets its result; a call sent
// meanwhile ends at once. The sessions of Serve and ServeStdio are closed
// without that wait, as when their context ends (see Serve). A closed
// gateway that goes on being served (mounted on a server that goes on
// serving) opens no new session: an initialize is answered 503 (a client
// tries again later), and a request of a session it ended, or one ended
// before, 404 saying that the gateway is closed and opens no new
// sessions.
//
// Close may be called more than once, from any goroutine: every call
// returns once the first call's shutdown is done, with its error, as the
// callers of http.Server.Shutdown all wait for the one shutdown. It must
// not be called from the gateway's callbacks (OnCall, Approve, Deny),
// which run in the requests it waits for.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() { g.closeErr = g.close() })
	return g.closeErr
}

// close is Close's shutdown, run once.
func (g *Gateway) close() error {
	g.mu.Lock()
	g.closed = true
	live := make(map[*gatewaySession]*sdk.ServerSession, len(g.sessions))
	maps.Copy(live, g.sessions)
	g.mu.Unlock()
	g.unwatch()
	g.updates.Unsubscribe()
	// The calls first, then the sessions once their results are written:
	// the go-sdk writes no response once a session is closing. The
	// sessions the gateway closes for its bounds (gatewaySession.close)
	// wait so too, each for at most resultWait from its end.
	g.interrupt()
	wait := time.NewTimer(g.resultWait)
	defer wait.Stop()
quiet:
	for s := range live {
		select {
		case <-s.quietCalls():
		case <-wait.C:
			break quiet
		}
	}
	g.cancel()
	for s, ss := range live {
		s.end(errGatewayClosed) // unless it ended already
		ss.Close()
	}
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for _, c := range g.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// clientFor returns the bus client that calls as identity, made on first
// use.
func (g *Gateway) clientFor(identity string) (*bus.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.clients[identity]; c != nil {
		return c, nil
	}
	if g.closed {
		return nil, errors.New("mcp: gateway closed")
	}
	o := g.copts
	o.Identity = identity
	// The gateway's view of the fleet: its changes refresh the sessions,
	// which then list from what it has seen (and it is held once).
	o.Fleet = g.fleet
	c, err := bus.NewClient(g.nc, &o)
	if err != nil {
		return nil, err
	}
	g.clients[identity] = c
	return c, nil
}

// watchGroups refreshes a session whose activation was written by anyone
// (reset_tools through another gateway or straight on the bus, toolctl
// groups set), at least to the revision written. After a reconnect it
// watches anew from the last revision it saw, and refreshes every session
// (what changed meanwhile may be gone from the bucket's history).
func (g *Gateway) watchGroups() {
	defer g.nc.RemoveStatusListener(g.reconnected)
	w := g.watcher
	defer func() { w.Stop() }()
	updates := w.Updates()
	var last uint64
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.reconnected:
			w.Stop()
			for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
				opt := jetstream.UpdatesOnly()
				if last > 0 {
					opt = jetstream.ResumeFromRevision(last + 1)
				}
				nw, err := g.groups.WatchAll(g.ctx, opt)
				if err == nil {
					w, updates = nw, nw.Updates()
					break
				}
				g.log.Warn("mcp: gateway: watching the group state again after a reconnect; retrying", "err", err, "in", wait.String())
				select {
				case <-g.ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			g.signal()
		case e, ok := <-updates:
			if !ok {
				updates = nil // ended: made again at the next reconnect
				continue
			}
			if e == nil {
				continue
			}
			last = max(last, e.Revision())
			scope, err := wire.ParseSessionKey(e.Key())
			if err != nil {
				continue
			}
			for _, s := range g.live() {
				if toolkit.SessionScope(s.identity, s.id) == scope {
					s.refresh(g.ctx, false, e.Revision())
				}
			}
		}
	}
}

// sessionByID is the connected HTTP session with MCP session id id; nil when
// there is none.
func (g *Gateway) sessionByID(id string) *gatewaySession {
	if id == "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byID[id]
}

// live returns the connected sessions.
func (g *Gateway) live() []*gatewaySession {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*gatewaySession, 0, len(g.sessions))
	for s := range g.sessions {
		out = append(out, s)
	}
	return out
}

// errGatewayClosed and errSessionEvicted are why track refuses a session;
// each is also the cause the end of a session (and its calls') has when
// Close, or makeRoom, ended it (stoppedText, goneWhy).
var (
	errGatewayClosed  = errors.New("mcp: gateway closed")
	errSessionEvicted = errors.New("mcp: gateway: this session was ended to make room for another client's (too many were open from here): initialize a new one")
)

// track registers a connected session for list-change notifications and
// forgets it when it ends. It fails when the gateway is closed or the
// session was ended for another source's (makeRoom).
func (g *Gateway) track(s *gatewaySession, ss *sdk.ServerSession) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errGatewayClosed
	}
	if s.evicted {
		return errSessionEvicted
	}
	if _, ok := g.sessions[s]; ok {
		return nil
	}
	g.sessions[s] = ss
	if s.source != "" {
		// HTTP sessions only: an HTTP request naming a session served
		// otherwise (Serve; stdio names its session, often guessably)
		// must not act on it (serveHTTP ends a session on DELETE).
		g.byID[s.id] = s
		// Idle from now until its first request with its id (the
		// initialize that opened it carried none).
		s.idleMu.Lock()
		if s.active == 0 {
			s.armIdleLocked(g.opts.SessionTimeout)
		}
		s.idleMu.Unlock()
	}
	g.unclaimLocked(s.claim)
	s.touch()
	opened := time.Now()
	g.log.Info("mcp: gateway: session opened", "session", s.id, "identity", s.identity)
	g.goroutine(func() {
		ss.Wait()
		g.untrack(s)
		g.log.Info("mcp: gateway: session closed", "session", s.id, "identity", s.identity, "lasted", time.Since(opened))
	})
	g.goroutine(s.tellUpdates)
	// The fleet may have changed since the session's tools were read.
	g.goroutine(func() { s.refresh(g.ctx, false, 0) })
	return nil
}

// untrack forgets s, whose go-sdk session has closed, as the session's
// end (its calls cancelled), remembering why it ended for a client that
// comes back with its id (gateway_gone.go). Calling it again does
// nothing.
func (g *Gateway) untrack(s *gatewaySession) {
	s.end(nil)
	s.stopIdle()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, s)
	if g.byID[s.id] == s {
		delete(g.byID, s.id)
		g.rememberGoneLocked(s, context.Cause(s.ctx))
	}
}

func (g *Gateway) signal() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// loop refreshes every session when the fleet changes, one change at a
// time (changes coalesce). A refresh writes nothing to the client: the
// session's own go-sdk server tells it notifications/tools/list_changed
// from a goroutine of its own (10 ms after the last change), so a client
// that stops reading delays only its own list changes.
func (g *Gateway) loop() {
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.changed:
		}
		for _, s := range g.live() {
			s.refresh(g.ctx, false, 0)
		}
	}
}

var _ http.Handler = (*Gateway)(nil)
