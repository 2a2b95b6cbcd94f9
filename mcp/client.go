package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/toolkit"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Client. A nil *Options means the defaults.
type Options struct {
	// Logger receives warnings (a server skipped, a tool skipped) and the
	// stdio servers' stderr at debug level; nil means slog.Default().
	Logger *slog.Logger
	// RetryInterval is the first delay before a server that could not be
	// listed is tried again; it doubles up to MaxRetryInterval. Zero means
	// 2s.
	RetryInterval time.Duration
	// MaxRetryInterval caps the retry delay; zero means one minute.
	MaxRetryInterval time.Duration
	// RelistInterval is how often the tools of a server that cannot tell
	// of a change are listed again: a stateless one, or a stateful one
	// that does not declare tools.listChanged. Zero means five minutes, a
	// negative value never (see "Keeping the tools current" in the
	// package doc).
	RelistInterval time.Duration
	// ClientInfo is the implementation announced to servers; nil means
	// toolbus.
	ClientInfo *sdk.Implementation
	// Tracer, when set, records each tools/call as a client span (see
	// trace.go); the trace context reaches the server either way.
	Tracer trace.Tracer
	// Grants keeps the OAuth grants of servers with ServerConfig.OAuth
	// (oauth.go); nil means MemoryGrants for this client alone. A worker
	// gives the fleet's KVGrants.
	Grants GrantStore
	// AuthorizationCodeFetcher, when set, lets the client run the OAuth
	// authorization flow itself: it takes the person to the authorization
	// URL and returns the code (LoopbackAuthorizer does that at this
	// machine). Without it a server that wants an authorization fails
	// with ErrNeedsAuthorization until a grant is stored.
	AuthorizationCodeFetcher auth.AuthorizationCodeFetcher
	// MaxToolBytes bounds the bytes the registered tools of the servers
	// mounted together (one Mount; a Client of NewClient alone) add to
	// their worker's announcement, each server's within
	// MaxServerToolBytes too. Zero means DefaultMaxToolBytes; a negative
	// value leaves no room. A worker gives its NATS server's max_payload
	// less what the rest of its announcement needs (see "Registration"
	// in the package doc).
	MaxToolBytes int
}

var (
	// ErrClosed is returned by a Client's methods after Close.
	ErrClosed = errors.New("mcp: client closed")
	// ErrUnknownTool is wrapped when enable_tools names a tool the server
	// does not have.
	ErrUnknownTool = errors.New("mcp: enable_tools names a tool the server does not have")
)

// unreachableError marks a failure to connect to or list a server: the
// server is skipped and retried, it is not a configuration error.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// Client is the connection of a worker to one configured MCP server. It
// lists the server's tools, registers them in a Toolkit and runs their
// calls: stateful (one shared session, reopened after a failure or an
// expired HTTP session) or stateless (a fresh session per call and per
// listing).
//
// All methods are safe for concurrent use. Calls never wedge: connecting
// has a deadline (ConnectTimeout) and a call ends with its context.
type Client struct {
	cfg  ServerConfig
	opts Options
	log  *slog.Logger
	sdkc *sdk.Client
	http *headerTransport // nil for stdio
	// orders is the servers' schemas' key order (schema_order.go).
	orders schemaOrders
	// budget is the room in the announcement this client's tools share
	// with those of the servers mounted with it (budget.go).
	budget *toolBudget
	// oauth authorizes a server with ServerConfig.OAuth (oauth.go).
	oauth auth.OAuthHandler

	router progressRouter
	tokens atomic.Uint64
	// reachable: the last connection attempt succeeded.
	reachable atomic.Bool
	// updated is told of the server's resource updates (ServeMounted).
	updated atomic.Pointer[func(uri string)]
	// caps: the server's capabilities at the last initialize.
	caps atomic.Pointer[sdk.ServerCapabilities]
	// secrets replaces the keys of the URL's query in errors (redact).
	secrets *strings.Replacer
	refresh chan struct{}
	// pendingRefresh: tools/list_changed came before a toolkit was known
	// (c.tk); the first sync lists again.
	pendingRefresh bool
	// wake cuts the background retry's wait short (a grant was stored).
	wake chan struct{}
	life context.Context // cancelled by Close: ends calls and background work
	kill context.CancelFunc
	bg   sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	sess    *session // stateful mode
	dialing *dial    // stateful mode: the connection attempt in progress
	// connected: a shared session was connected before (a reconnect
	// re-lists the tools)
	connected bool
	live      map[*session]struct{} // stateless mode: sessions of calls in flight
	tk        *toolkit.Toolkit
	subs      map[string]bool // resources subscribed to (mounted.go)
	// inflight: the calls in progress on each session (relay.go)
	inflight map[*sdk.ClientSession][]*inflight
	names    []string        // toolkit names this client registered
	safe     map[string]bool // MCP tool name → repeating a call is harmless
	regMu    sync.Mutex
	defs     map[string]string // under regMu: each registered tool's definition, to leave unchanged ones be
	retry    bool              // a background retry loop runs
	// disableWarned: the names of DisableTools the server did not have,
	// warned of once each.
	disableWarned map[string]bool
	// synced: a registration was made (sync), so a listing is a re-sync;
	// missingWarned: the error last warned of at a re-sync for
	// EnableTools the server no longer lists ("" for none).
	synced        bool
	missingWarned string
	// dupWarned: the names the last listing had more than once, as
	// warned of ("" for none)
	dupWarned string
	// skipWarned: the warnings of the tools the last registration
	// skipped (skipWarning.key), under regMu
	skipWarned map[string]bool
}

// NewClient validates cfg (with its defaults, ServerConfig.WithDefaults)
// and returns a Client that has not connected yet. Connect, Register or
// Start connect it.
func NewClient(cfg ServerConfig, opts *Options) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, refresh: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
	c.life, c.kill = context.WithCancel(context.Background())
	if opts != nil {
		c.opts = *opts
	}
	c.budget = newToolBudget(c.opts.MaxToolBytes)
	if c.opts.RetryInterval <= 0 {
		c.opts.RetryInterval = 2 * time.Second
	}
	if c.opts.MaxRetryInterval <= 0 {
		c.opts.MaxRetryInterval = time.Minute
	}
	if c.opts.RelistInterval == 0 {
		c.opts.RelistInterval = defaultRelistInterval
	}
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("mcp_server", cfg.Name)
	info := c.opts.ClientInfo
	if info == nil {
		info = &sdk.Implementation{Name: "toolbus", Version: "1"}
	}
	copts := &sdk.ClientOptions{
		Logger: c.log,
		// No roots: a worker has none to offer. Sampling, elicitation and
		// log messages go to the caller of the call (relay.go).
		Capabilities:         &sdk.ClientCapabilities{},
		ElicitationHandler:   c.elicit,
		CreateMessageHandler: c.sample,
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			// Only those of resources the worker subscribed to: the fleet's
			// gateways hear every one published.
			if f := c.updated.Load(); f != nil && req.Params != nil && c.subscribed(req.Params.URI) {
				(*f)(req.Params.URI)
			}
		},
		// Heard on any session: the shared one, or a call's in stateless
		// mode.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.relist() },
	}
	if cfg.Transport == TransportSSE {
		// Legacy SSE has one stream for every request: log messages are
		// attributed by session (relay.go). stdio and Streamable HTTP tap
		// them off the wire per call instead (tap.go), in order.
		copts.LoggingMessageHandler = c.logMessage
	}
	c.sdkc = sdk.NewClient(info, copts)
	c.sdkc.AddSendingMiddleware(uncachedResults)
	if cfg.Transport != TransportStdio {
		origin, _ := url.Parse(cfg.URL) // Validate parsed it
		c.http = newHeaderTransport(origin, cfg.Headers, &c.router)
		c.http.orders = &c.orders
		if cfg.Transport == TransportStreamableHTTP {
			// Its requests past the bound are refused unhandled
			// (answers.go).
			c.http.answers = newAnswerLimit(c.log)
			c.http.streamable = true
			c.sdkc.AddReceivingMiddleware(c.http.answers.admit)
		}
		c.secrets = urlSecrets(origin)
	}
	if cfg.OAuth != nil {
		var err error
		if c.oauth, err = c.newOAuth(); err != nil {
			c.kill()
			return nil, err
		}
		if w, ok := c.opts.Grants.(grantWatcher); ok {
			c.goBG(func() { w.Watch(c.life, cfg.Name, c.retryNow) })
		}
	}
	c.bg.Add(1)
	go c.refreshLoop()
	return c, nil
}

// Name returns the configured server name.
func (c *Client) Name() string { return c.cfg.Name }

// Up reports whether the server is reachable as far as the client knows:
// a stateful client has a live session, a stateless one connected the
// last time it tried. A server that is down at the start is not up until
// the background retry (or a call) connects it.
func (c *Client) Up() bool {
	if c.cfg.mode() == ModeStateless {
		return c.reachable.Load()
	}
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	return s != nil && !s.dead.Load()
}

// Config returns a copy of the client's configuration.
func (c *Client) Config() ServerConfig { return c.cfg }

// Connect opens the shared session of a stateful client (it is a no-op in
// stateless mode, where every call opens its own). It is bounded by
// ConnectTimeout as well as ctx.
func (c *Client) Connect(ctx context.Context) error {
	if c.cfg.mode() == ModeStateless {
		return c.checkOpen()
	}
	_, err := c.session(ctx)
	return c.redact(err)
}

// urlSecrets replaces the values of u's query and its password, which
// hosted servers take API keys in: the go-sdk's errors quote the URL of
// the request that failed (net/http hides a password, not a query). A
// "name=value" is replaced wherever it is, a value alone when it is long
// enough not to be a word of the error's text.
func urlSecrets(u *url.URL) *strings.Replacer {
	const hidden = "***"
	var pairs, values []string
	long := func(v string) {
		if len(v) >= 8 {
			values = append(values, v, hidden)
		}
	}
	for p := range strings.SplitSeq(u.RawQuery, "&") {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" {
			continue
		}
		pairs = append(pairs, p, k+"="+hidden)
		long(v)
		if d, err := url.QueryUnescape(v); err == nil && d != v {
			long(d)
		}
	}
	if pw, ok := u.User.Password(); ok {
		long(pw)
	}
	if len(pairs)+len(values) == 0 {
		return nil
	}
	return strings.NewReplacer(append(pairs, values...)...) // pairs first: they win where both match
}

// redact hides the URL's secrets (urlSecrets) in err's text; errors.Is and
// As see err as it was.
func (c *Client) redact(err error) error {
	if err == nil || c.secrets == nil {
		return err
	}
	text := err.Error()
	if r := c.secrets.Replace(text); r != text {
		return &redactedError{error: err, text: r}
	}
	return err
}

// redactedError is an error whose text hides the URL's secrets.
type redactedError struct {
	error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.error }

func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// SetRuntimeHeaders replaces the runtime headers sent with every later
// HTTP request to the server, without reconnecting: the session (and its
// Mcp-Session-Id) stays. Runtime headers are layered over the configured
// ones (the same name: the runtime value wins); an empty or nil map
// restores the configured headers alone. Requests already sent (the
// long-lived standalone event stream among them) keep their headers.
// Host, Content-Length, Connection, Transfer-Encoding and the MCP
// session/protocol headers are rejected, as are invalid names and values;
// a rejected map changes nothing. stdio servers have no headers: an error.
func (c *Client) SetRuntimeHeaders(headers map[string]string) error {
	if c.http == nil {
		return fmt.Errorf("%w: MCP server %q uses %s; runtime headers need an HTTP transport", ErrRuntimeHeaders, c.cfg.Name, c.cfg.Transport)
	}
	if err := checkHeaders(headers); err != nil {
		return fmt.Errorf("%w: %v", ErrRuntimeHeaders, err)
	}
	if c.cfg.OAuth != nil {
		for k := range headers {
			if strings.EqualFold(k, "Authorization") {
				return fmt.Errorf("%w: MCP server %q is authorized by OAuth; an Authorization header would override its token", ErrRuntimeHeaders, c.cfg.Name)
			}
		}
	}
	if err := c.checkOpen(); err != nil {
		return err
	}
	c.http.set(headers)
	return nil
}

// Close unregisters the client's tools from the toolkit, closes its
// session (terminating a stdio server) and stops its background work.
// Calls in flight end with an error. Close is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	s := c.sess
	c.sess = nil
	live := c.live
	c.live = nil
	c.mu.Unlock()
	c.kill() // cancels calls in flight first: a session closes only once its requests end
	for ls := range live {
		ls.dead.Store(true)
		_ = ls.cs.Close() // its call ends with an error; its own defer closes it again (idempotent)
	}
	c.regMu.Lock() // wait for a sync in progress; later ones see closed
	c.regMu.Unlock()
	c.mu.Lock()
	tk, names := c.tk, c.names
	c.names = nil
	c.mu.Unlock()
	if tk != nil {
		tk.Remove(names...)
	}
	c.budget.release(c)
	if s != nil {
		c.closeSession(s)
	}
	c.bg.Wait()
	if c.http != nil {
		c.http.closeIdle()
	}
	return nil
}
