package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/toolkit"
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
	// ClientInfo is the implementation announced to servers; nil means
	// toolbus.
	ClientInfo *sdk.Implementation
}

var (
	// ErrClosed is returned by a Client's methods after Close.
	ErrClosed = errors.New("toolbus/mcp: client closed")
	// ErrUnknownTool is wrapped when enable_tools names a tool the server
	// does not have.
	ErrUnknownTool = errors.New("toolbus/mcp: enable_tools names a tool the server does not have")
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

	router  progressRouter
	tokens  atomic.Uint64
	connSem chan struct{} // serialises (re)connects
	refresh chan struct{}
	stop    chan struct{}
	life    context.Context // cancelled by Close: ends calls and background work
	kill    context.CancelFunc
	bg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	sess   *session              // stateful mode
	live   map[*session]struct{} // stateless mode: sessions of calls in flight
	tk     *toolkit.Toolkit
	names  []string        // toolkit names this client registered
	safe   map[string]bool // MCP tool name → repeating a call is harmless
	regMu  sync.Mutex
	retry  bool // a background retry loop runs
}

type session struct {
	cs     *sdk.ClientSession
	cmd    *exec.Cmd   // stdio only
	stderr *tailBuffer // stdio only
	dead   atomic.Bool
}

// NewClient validates cfg and returns a Client that has not connected
// yet. Connect, Register or Start connect it.
func NewClient(cfg ServerConfig, opts *Options) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, connSem: make(chan struct{}, 1), refresh: make(chan struct{}, 1), stop: make(chan struct{})}
	c.life, c.kill = context.WithCancel(context.Background())
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.RetryInterval <= 0 {
		c.opts.RetryInterval = 2 * time.Second
	}
	if c.opts.MaxRetryInterval <= 0 {
		c.opts.MaxRetryInterval = time.Minute
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
	c.sdkc = sdk.NewClient(info, &sdk.ClientOptions{
		Logger: c.log,
		// No roots, sampling or elicitation: a worker has none to offer.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case c.refresh <- struct{}{}:
			default:
			}
		},
	})
	if cfg.Transport != TransportStdio {
		c.http = newHeaderTransport(cfg.Headers, &c.router)
	}
	c.bg.Add(1)
	go c.refreshLoop()
	return c, nil
}

// Name returns the configured server name.
func (c *Client) Name() string { return c.cfg.Name }

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
	return err
}

func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// open connects a new session.
func (c *Client) open(ctx context.Context) (*session, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.connectTimeout())
	defer cancel()
	s := &session{}
	var t sdk.Transport
	switch c.cfg.Transport {
	case TransportStdio:
		cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
		cmd.Dir = c.cfg.Cwd
		if len(c.cfg.Env) > 0 {
			cmd.Env = os.Environ()
			for k, v := range c.cfg.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		s.cmd, s.stderr = cmd, &tailBuffer{log: c.log}
		cmd.Stderr = s.stderr
		// Servers that ignore stdin EOF (server-everything does) cost this
		// long on every close before they are signalled.
		td := 2 * time.Second
		if c.cfg.mode() == ModeStateless {
			td = 500 * time.Millisecond
		}
		t = &tapTransport{inner: &sdk.CommandTransport{Command: cmd, TerminateDuration: td}, router: &c.router}
	case TransportStreamableHTTP:
		t = &sdk.StreamableClientTransport{
			Endpoint:             c.cfg.URL,
			HTTPClient:           &http.Client{Transport: c.http},
			DisableStandaloneSSE: c.cfg.mode() == ModeStateless,
		}
	case TransportSSE:
		t = &detachedTransport{inner: &sdk.SSEClientTransport{Endpoint: c.cfg.URL, HTTPClient: &http.Client{Transport: c.http}}}
	}
	var so *sdk.ClientSessionOptions
	if c.cfg.ProtocolVersion != "" {
		so = &sdk.ClientSessionOptions{ProtocolVersion: c.cfg.ProtocolVersion}
	}
	cs, err := c.sdkc.Connect(ctx, t, so)
	if err != nil {
		return nil, &unreachableError{fmt.Errorf("connecting to MCP server %q: %w%s", c.cfg.Name, err, s.stderr.suffix())}
	}
	s.cs = cs
	if !c.goBG(func() {
		_ = cs.Wait()
		s.dead.Store(true)
	}) {
		c.closeSession(s)
		return nil, ErrClosed
	}
	return s, nil
}

// goBG runs f in a tracked goroutine unless the client is closed.
func (c *Client) goBG(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		f()
	}()
	return true
}

// closeSession closes s; a stdio server killed after ignoring stdin EOF
// reports "signal: terminated", which is expected.
func (c *Client) closeSession(s *session) {
	s.dead.Store(true)
	if err := s.cs.Close(); err != nil {
		c.log.Debug("closing MCP session", "error", err)
	}
}

// session returns the shared session of a stateful client, connecting it
// if there is none or the last one died.
func (c *Client) session(ctx context.Context) (*session, error) {
	if s := c.current(); s != nil {
		return s, nil
	}
	select {
	case c.connSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.connSem }()
	if s := c.current(); s != nil {
		return s, nil
	}
	s, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.closeSession(s)
		return nil, ErrClosed
	}
	c.sess = s
	c.mu.Unlock()
	return s, nil
}

// current returns the live shared session, discarding a dead one.
func (c *Client) current() *session {
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	if s.dead.Load() {
		c.discard(s)
		return nil
	}
	return s
}

// discard retires a failed shared session; the next use reconnects.
func (c *Client) discard(s *session) {
	s.dead.Store(true)
	c.mu.Lock()
	if c.sess == s {
		c.sess = nil
	}
	c.mu.Unlock()
	if !c.goBG(func() { c.closeSession(s) }) {
		c.closeSession(s)
	}
}

// withSession runs f on a session: the shared one (reconnecting once if it
// turns out to have died before the request was sent), or a fresh one in
// stateless mode.
//
// A request that failed in transport after it may have reached the server
// is sent again only when retrySafe says repeating it is harmless (the
// tool is read-only or idempotent, or the request is a listing).
func (c *Client) withSession(ctx context.Context, retrySafe bool, f func(*sdk.ClientSession) error) error {
	if c.cfg.mode() == ModeStateless {
		s, err := c.open(ctx)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			c.closeSession(s)
			return ErrClosed
		}
		if c.live == nil {
			c.live = map[*session]struct{}{}
		}
		c.live[s] = struct{}{}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.live, s)
			c.mu.Unlock()
			if c.cfg.Transport == TransportStdio {
				if c.goBG(func() { c.closeSession(s) }) {
					return
				}
			}
			c.closeSession(s)
		}()
		return f(s.cs)
	}
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			return err
		}
		err = f(s.cs)
		if err == nil || ctx.Err() != nil || isProtocolError(err) {
			return err
		}
		// The transport failed: this session is of no further use.
		c.discard(s)
		if attempt == 0 && (retrySafe || notDelivered(err)) {
			continue
		}
		return err
	}
}

// JSON-RPC codes the go-sdk uses for local transport failures, not for
// answers from the server.
const (
	codeClientClosing       = -32003
	codeServerClosing       = -32004
	codeRejectedByTransport = -32005 // the request never reached the server
)

// isProtocolError reports an error answer from the server (as opposed to
// a transport failure, which the go-sdk may also wrap in a jsonrpc.Error).
func isProtocolError(err error) bool {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return false
	}
	switch we.Code {
	case codeClientClosing, codeServerClosing, codeRejectedByTransport:
		return false
	}
	return true
}

// notDelivered reports errors that prove the server never processed the
// request (an expired HTTP session, a connection already closed, an HTTP
// request that could not be sent), so it is safe to send again on a new
// session.
func notDelivered(err error) bool {
	var we *jsonrpc.Error
	return errors.Is(err, sdk.ErrSessionMissing) || errors.Is(err, sdk.ErrConnectionClosed) ||
		(errors.As(err, &we) && we.Code == codeRejectedByTransport)
}

// detachedTransport connects its inner transport with a context that
// outlives Connect: the legacy SSE transport ties its event stream to the
// context it is connected with, and the connect deadline must not end the
// session. The deadline still bounds the wait for Connect.
type detachedTransport struct{ inner sdk.Transport }

func (t *detachedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	type result struct {
		conn sdk.Connection
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		conn, err := t.inner.Connect(dctx)
		ch <- result{conn, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		return &cancelOnClose{Connection: r.conn, cancel: cancel}, nil
	case <-ctx.Done():
		cancel()
		go func() {
			if r := <-ch; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

type cancelOnClose struct {
	sdk.Connection
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

// ListTools returns the server's tools (every page), filtered by
// enable_tools and disable_tools. An enable_tools name the server lacks is
// an error wrapping ErrUnknownTool.
func (c *Client) ListTools(ctx context.Context) ([]*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.connectTimeout())
	defer cancel()
	var all []*sdk.Tool
	err := c.withSession(ctx, true, func(cs *sdk.ClientSession) error {
		all = all[:0]
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			all = append(all, t)
		}
		return nil
	})
	if err != nil {
		var ue *unreachableError
		if errors.As(err, &ue) || errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, &unreachableError{fmt.Errorf("listing the tools of MCP server %q: %w", c.cfg.Name, err)}
	}
	return c.filter(all)
}

func (c *Client) filter(all []*sdk.Tool) ([]*sdk.Tool, error) {
	if len(c.cfg.EnableTools) > 0 {
		var missing []string
		for _, n := range c.cfg.EnableTools {
			if !slices.ContainsFunc(all, func(t *sdk.Tool) bool { return t.Name == n }) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			have := make([]string, len(all))
			for i, t := range all {
				have[i] = t.Name
			}
			return nil, fmt.Errorf("%w: MCP server %q has no tool %s (it has: %s)", ErrUnknownTool, c.cfg.Name,
				strings.Join(missing, ", "), strings.Join(have, ", "))
		}
	}
	out := make([]*sdk.Tool, 0, len(all))
	for _, t := range all {
		if len(c.cfg.EnableTools) > 0 && !slices.Contains(c.cfg.EnableTools, t.Name) {
			continue
		}
		if slices.Contains(c.cfg.DisableTools, t.Name) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// Register lists the server's tools and registers them in tk as
// mcp__{server}__{tool}, in the configured group (created if missing),
// with the server's input schema and flags from its annotations (see
// ToolName). Calling it again re-syncs: changed tools are replaced and
// tools the server no longer lists are removed. A tool whose name is taken
// by another registration, or whose schema the toolkit rejects, is skipped
// with a warning. The client re-syncs by itself when the server announces
// tools/list_changed.
func (c *Client) Register(ctx context.Context, tk *toolkit.Toolkit) error {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	return c.sync(tk, tools)
}

func (c *Client) sync(tk *toolkit.Toolkit, tools []*sdk.Tool) error {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if err := c.checkOpen(); err != nil {
		return err
	}
	if g := c.cfg.Group; g != "" && !slices.ContainsFunc(tk.Groups(), func(x toolkit.Group) bool { return x.Name == g }) {
		err := tk.AddGroup(toolkit.Group{Name: g, Description: fmt.Sprintf("Tools from the MCP server %q.", c.cfg.Name)})
		if err != nil && !slices.ContainsFunc(tk.Groups(), func(x toolkit.Group) bool { return x.Name == g }) {
			return fmt.Errorf("toolbus/mcp: server %q: creating group %q: %w", c.cfg.Name, g, err)
		}
	}
	c.mu.Lock()
	owned := slices.Clone(c.names)
	if c.tk != nil && c.tk != tk {
		owned = nil // registering into another toolkit: nothing there is ours yet
	}
	c.mu.Unlock()
	var names []string
	safe := map[string]bool{}
	for _, t := range tools {
		if a := t.Annotations; a != nil && (a.ReadOnlyHint || a.IdempotentHint) {
			safe[t.Name] = true
		}
		name := ToolName(c.cfg.Name, t.Name)
		if slices.Contains(names, name) {
			c.log.Warn("MCP tool skipped: its name collides with another tool of the server after sanitising", "tool", t.Name, "name", name)
			continue
		}
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			c.log.Warn("MCP tool skipped", "tool", t.Name, "error", err)
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		opts := toolOptions(t, c.cfg.Group)
		if slices.Contains(owned, name) {
			opts = append(opts, toolkit.OnConflict(toolkit.ConflictOverride))
		}
		if err := tk.Add(toolkit.Raw(name, desc, schema, c.handler(t.Name)), opts...); err != nil {
			c.log.Warn("MCP tool skipped", "tool", t.Name, "error", err)
			continue
		}
		names = append(names, name)
	}
	var stale []string
	for _, n := range owned {
		if !slices.Contains(names, n) {
			stale = append(stale, n)
		}
	}
	tk.Remove(stale...)
	c.mu.Lock()
	c.tk, c.names, c.safe = tk, names, safe
	c.mu.Unlock()
	return nil
}

// Tools returns the toolkit names this client has registered.
func (c *Client) Tools() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.names)
}

// Start is Register for a worker that must not die because one server is
// down: a server that cannot be reached or listed is skipped with a
// warning and retried in the background (with backoff) until it answers.
// Configuration errors (an enable_tools name the server lacks, a group
// that cannot be created) are returned.
func (c *Client) Start(ctx context.Context, tk *toolkit.Toolkit) error {
	err := c.Register(ctx, tk)
	var ue *unreachableError
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	c.log.Warn("MCP server skipped for now; retrying in the background", "error", err)
	c.mu.Lock()
	c.tk = tk
	c.mu.Unlock()
	c.startRetry(tk)
	return nil
}

func (c *Client) startRetry(tk *toolkit.Toolkit) {
	c.mu.Lock()
	if c.retry {
		c.mu.Unlock()
		return
	}
	c.retry = true
	c.mu.Unlock()
	c.goBG(func() {
		defer func() {
			c.mu.Lock()
			c.retry = false
			c.mu.Unlock()
		}()
		delay := c.opts.RetryInterval
		for {
			timer := time.NewTimer(delay)
			select {
			case <-c.stop:
				timer.Stop()
				return
			case <-timer.C:
			}
			err := c.Register(c.life, tk)
			if err == nil {
				c.log.Info("MCP server is back; its tools are registered", "tools", len(c.Tools()))
				return
			}
			if errors.Is(err, ErrClosed) || c.life.Err() != nil {
				return
			}
			c.log.Warn("MCP server still unavailable", "error", err, "retry_in", delay)
			delay = min(delay*2, c.opts.MaxRetryInterval)
		}
	})
}

// refreshLoop re-syncs the registered tools when the server announces
// tools/list_changed.
func (c *Client) refreshLoop() {
	defer c.bg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.refresh:
		}
		c.mu.Lock()
		tk := c.tk
		c.mu.Unlock()
		if tk == nil {
			continue
		}
		if err := c.Register(c.life, tk); err != nil && !errors.Is(err, ErrClosed) && c.life.Err() == nil {
			c.log.Warn("re-listing MCP tools after tools/list_changed failed", "error", err)
			var ue *unreachableError
			if errors.As(err, &ue) {
				c.startRetry(tk)
			}
		}
	}
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
	close(c.stop)
	c.regMu.Lock() // wait for a sync in progress; later ones see closed
	c.regMu.Unlock()
	c.mu.Lock()
	tk, names := c.tk, c.names
	c.names = nil
	c.mu.Unlock()
	if tk != nil {
		tk.Remove(names...)
	}
	if s != nil {
		c.closeSession(s)
	}
	c.bg.Wait()
	if c.http != nil {
		c.http.closeIdle()
	}
	return nil
}

// tailBuffer keeps the end of a stdio server's stderr for error messages
// and logs it at debug level.
type tailBuffer struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.log.Debug("MCP server stderr", "text", strings.TrimRight(string(p), "\n"))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = slices.Clone(t.buf[len(t.buf)-tailSize:])
	}
	return len(p), nil
}

// suffix formats the captured stderr for an error message.
func (t *tailBuffer) suffix() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; server stderr: " + s
}
