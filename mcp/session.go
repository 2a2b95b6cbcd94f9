package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is one MCP session: the shared one of a stateful client, or
// the one-call session of a stateless one.
type session struct {
	cs        *sdk.ClientSession
	cmd       *exec.Cmd     // stdio only
	stderr    *tailBuffer   // stdio only
	closeWait time.Duration // stdio only: how long a close may take before the server is killed
	dead      atomic.Bool
	// ended is closed once the session is closed (a stdio server's
	// process waited for), with closeErr what closing it returned.
	ended    chan struct{}
	endOnce  sync.Once
	closeErr error
}

// exitNote says how a stdio server whose connection broke ended, and what
// it last wrote to its stderr, once its session is closed, or only the
// latter when that is not known within exitNoteWait (a server that closed
// its stdout but runs on, which the close gives its closeWait; said so
// when eof, the connection having ended with the end of its stdout,
// between messages or in the middle of one) or
// before ctx ends: the caller's final is not held up for long by what is
// only an explanation. A server the client signalled itself (one that
// did not exit on its own) is not said to have exited; with eof, one its
// close's SIGTERM ended is said to have closed its stdout and run on.
func (s *session) exitNote(ctx context.Context, eof bool) string {
	if s == nil || s.cmd == nil {
		return ""
	}
	t := time.NewTimer(exitNoteWait)
	defer t.Stop()
	select {
	case <-s.ended:
	case <-ctx.Done():
		return s.stderr.suffix()
	case <-t.C:
		if eof {
			return fmt.Sprintf("; the server closed its stdout and had not exited %v later", exitNoteWait) + s.stderr.suffix()
		}
		return s.stderr.suffix()
	}
	note := ""
	var ee *exec.ExitError
	if errors.As(s.closeErr, &ee) {
		ws, ok := ee.Sys().(syscall.WaitStatus)
		switch {
		case ee.Exited() || (ok && ws.Signaled() && ws.Signal() != syscall.SIGTERM && ws.Signal() != syscall.SIGKILL):
			note = "; the server exited: " + ee.Error()
		case eof && ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM:
			// The close's SIGTERM, which stateless mode sends sooner
			// than exitNoteWait: it had not exited on its own.
			note = "; the server closed its stdout and had not exited when the client's close signalled it"
		}
	}
	return note + s.stderr.suffix()
}

// exitNoteWait bounds how long a call's error waits to say how its stdio
// server ended: one that exited is reaped at once.
const exitNoteWait = 2 * time.Second

// kill ends a stdio server with its whole process group: a server started
// through a wrapper (a script that sets up its environment first) is a
// grandchild the transport's signals do not reach.
func (s *session) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		killGroup(s.cmd.Process.Pid)
	}
}

// open connects a new session.
func (c *Client) open(ctx context.Context) (*session, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.connectTimeout())
	defer cancel()
	s := &session{ended: make(chan struct{})}
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
		// Its own process group, ended whole (kill), and ended with the
		// worker's process (serverProcAttr); and a wait that a descendant
		// holding stderr open cannot block.
		cmd.SysProcAttr = serverProcAttr()
		cmd.WaitDelay = time.Second
		// Servers that ignore stdin EOF (server-everything does) cost this
		// long on every close before they are signalled.
		td := 2 * time.Second
		if c.cfg.mode() == ModeStateless {
			td = 500 * time.Millisecond
		}
		s.closeWait = td + 3*time.Second
		t = &tapTransport{inner: &sdk.CommandTransport{Command: cmd, TerminateDuration: td}, router: &c.router, orders: &c.orders, log: c.log}
	case TransportStreamableHTTP:
		t = &sdk.StreamableClientTransport{
			Endpoint:             c.cfg.URL,
			HTTPClient:           &http.Client{Transport: c.http},
			DisableStandaloneSSE: c.cfg.mode() == ModeStateless,
		}
		if c.oauth != nil {
			t.(*sdk.StreamableClientTransport).OAuthHandler = c.oauth
		}
	case TransportSSE:
		sse := &refusingTransport{&sdk.SSEClientTransport{Endpoint: c.cfg.URL, HTTPClient: &http.Client{Transport: c.http}}}
		t = &detachedTransport{inner: &askTransport{inner: sse, log: c.log, transport: "SSE"}}
	}
	var so *sdk.ClientSessionOptions
	if c.cfg.ProtocolVersion != "" {
		so = &sdk.ClientSessionOptions{ProtocolVersion: c.cfg.ProtocolVersion}
	}
	cs, err := c.sdkc.Connect(ctx, t, so)
	c.reachable.Store(err == nil)
	if err != nil {
		// The go-sdk closed the connection and signalled its child; what
		// a wrapper started is ended with the group.
		s.kill()
		return nil, &unreachableError{fmt.Errorf("connecting to MCP server %q: %w%s%s", c.cfg.Name, err, c.http.refusal(err), s.stderr.suffix())}
	}
	s.cs = cs
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil {
		c.caps.Store(r.Capabilities)
		if lvl := c.cfg.logLevel(); lvl != "" && r.Capabilities.Logging != nil {
			// Servers send no log message before the level is set.
			if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: sdk.LoggingLevel(lvl)}); err != nil {
				c.log.Debug("mcp: setting the server's log level", "level", lvl, "err", err)
			}
		}
	}
	if c.cfg.mode() == ModeStateful {
		c.resubscribe(cs)
	}
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
//
// A stdio server is then killed with its process group (what a wrapper
// left behind), and also when the close takes longer than it may: a
// server that stopped reading its stdin blocks the close in a write.
func (c *Client) closeSession(s *session) {
	s.dead.Store(true)
	var err error
	defer s.endOnce.Do(func() {
		s.closeErr = err
		close(s.ended)
	})
	if s.cmd != nil {
		stuck := time.AfterFunc(s.closeWait, s.kill)
		defer func() {
			stuck.Stop()
			s.kill()
		}()
	}
	if err = s.cs.Close(); err != nil {
		c.log.Debug("closing MCP session", "error", err)
	}
}

// session returns the shared session of a stateful client, connecting it
// if there is none or the last one died.
//
// One connection attempt runs at a time, and every call that needs the
// session meanwhile waits for it and shares its outcome: a server that
// does not answer the handshake fails them all at ConnectTimeout, not
// one after another. The attempt is the client's, not the first caller's:
// a caller that gives up leaves it running for the others (Close ends it).
func (c *Client) session(ctx context.Context) (*session, error) {
	if s := c.current(); s != nil {
		return s, nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	d := c.dialing
	if d == nil {
		d = &dial{done: make(chan struct{})}
		c.dialing = d
		c.bg.Add(1)
		go c.dial(d)
	}
	if ctx.Value(syncingKey{}) != nil {
		d.syncing = true
	}
	c.mu.Unlock()
	select {
	case <-d.done:
		return d.s, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dial is one attempt to connect the shared session.
type dial struct {
	done chan struct{} // closed when s or err is set
	s    *session
	err  error
	// syncing (under Client.mu): a re-sync of the registration (Register)
	// waits for this attempt and lists on the session it connects
	syncing bool
}

// dial connects the shared session for d's waiters.
func (c *Client) dial(d *dial) {
	defer c.bg.Done()
	s, err := c.open(c.life)
	c.mu.Lock()
	c.dialing = nil
	if err == nil && c.closed {
		c.mu.Unlock()
		c.closeSession(s)
		s, err = nil, ErrClosed
	} else {
		again := false
		if err == nil {
			c.sess = s
			again, c.connected = c.connected && !d.syncing, true
		}
		c.mu.Unlock()
		if again {
			// A server that restarted may list other tools, and tells a new
			// session of no change: the registration is re-synced. Not when
			// a re-sync waits for this session: it lists on it, and a
			// re-listing asked for here would reconnect again if the
			// session died meanwhile (a server whose sessions do not last
			// past the handshake was reconnected without pause).
			c.relist()
		}
	}
	d.s, d.err = s, err
	close(d.done)
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
// stateless mode. Its errors hide the URL's secrets (redact).
//
// A request that failed in transport after it may have reached the server
// is sent again only when retrySafe says repeating it is harmless (the
// tool is read-only or idempotent, or the request is a listing).
func (c *Client) withSession(ctx context.Context, retrySafe bool, f func(*sdk.ClientSession) error) error {
	return c.redact(c.onSession(ctx, retrySafe, f))
}

// onSession is withSession, its errors as they come.
func (c *Client) onSession(ctx context.Context, retrySafe bool, f func(*sdk.ClientSession) error) error {
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
		return c.streamCut(s, f(s.cs))
	}
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			return err
		}
		err = c.streamCut(s, f(s.cs))
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

// sdkStreamCut is the go-sdk's error for a request whose Streamable HTTP
// response was an event stream that ended without the request's result
// and without an event id to resume it from.
const sdkStreamCut = "request terminated without response"

// streamCut makes err, when it is a Streamable HTTP response stream that
// ended without its request's result (a server whose handler of the
// request failed, a proxy that cut the stream), the server's fault: the
// go-sdk fails that request alone and the session goes on, but the
// error read as a broken connection, and the session was closed with
// every other request running on it (a read-only one sent again).
func (c *Client) streamCut(s *session, err error) error {
	if err == nil || c.cfg.Transport != TransportStreamableHTTP || s.dead.Load() {
		return err
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == sdkStreamCut {
			return &serverFault{fmt.Errorf("the MCP server %q ended its response stream without the result", c.cfg.Name)}
		}
	}
	return err
}

// JSON-RPC codes the go-sdk uses for local transport failures, not for
// answers from the server.
const (
	codeClientClosing       = -32003
	codeServerClosing       = -32004
	codeRejectedByTransport = -32005 // the request never reached the server
)

// serverFault is an answer the server gave that cannot be taken (a
// listing without end): like an error answer, not worth asking again.
type serverFault struct{ error }

func (e *serverFault) Unwrap() error { return e.error }

// isProtocolError reports an error answer from the server (as opposed to
// a transport failure, which the go-sdk may also wrap in a jsonrpc.Error).
func isProtocolError(err error) bool {
	var sf *serverFault
	if errors.As(err, &sf) {
		return true
	}
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

// unreadableAnswer reports a result the server sent that the go-sdk could
// not decode (a content type it does not know, invalid base64, a field of
// the wrong type): the answer came whole, so the session is sound and the
// request is not to be sent again.
func unreadableAnswer(err error) bool {
	if errors.Is(err, sdk.ErrConnectionClosed) {
		return false
	}
	// Not a json.SyntaxError: a result is decoded from JSON the
	// connection's reader already took whole, so a syntax error is that
	// reader's, on a stream that is broken (a stdio server writing
	// anything else than JSON-RPC to its stdout), and the session ends.
	var te *json.UnmarshalTypeError
	var be base64.CorruptInputError
	if errors.As(err, &te) || errors.As(err, &be) {
		return true
	}
	// The go-sdk's content errors (contentFromWire) have no type.
	msg := err.Error()
	return strings.Contains(msg, "unrecognized content type") || strings.Contains(msg, "invalid content type") || strings.HasSuffix(msg, ": nil content")
}

// resultlessAnswer reports err as a Streamable HTTP server's response
// holding neither a result nor an error, which the go-sdk decodes as
// io.EOF, wrapped once (calling "tools/call": EOF); stdio and legacy SSE
// responses are marked on the wire instead (markResultless). A request
// that failed on the network wraps its io.EOF deeper, and the
// connection's reader ends with a bare io.EOF only when the client
// closes it, which marks its session dead first.
func (c *Client) resultlessAnswer(cs *sdk.ClientSession, err error) bool {
	if c.cfg.Transport != TransportStreamableHTTP || errors.Unwrap(err) != io.EOF {
		return false
	}
	s := c.sessionOf(cs)
	return s != nil && !s.dead.Load()
}

// notDelivered reports errors that prove the server never processed the
// request (an expired HTTP session, a connection already closed, an HTTP
// request that could not be sent), so it is safe to send again on a new
// session.
func notDelivered(err error) bool {
	var re *receivedError
	if errors.As(err, &re) {
		return false
	}
	var we *jsonrpc.Error
	return errors.Is(err, sdk.ErrSessionMissing) || errors.Is(err, sdk.ErrConnectionClosed) ||
		(errors.As(err, &we) && we.Code == codeRejectedByTransport)
}

// receivedError is a request's failure the go-sdk reports "rejected by
// transport" (as if never sent) though the HTTP server received the
// request and may have run it: it answered 500, 502 or 504, which the
// go-sdk takes for transient. A 503 or 429 says the server did not take
// the request, and stays "rejected".
type receivedError struct{ error }

func (e *receivedError) Unwrap() error { return e.error }

// received wraps err when status (the HTTP answer to the request, 0 for
// none) says the server may have run the request.
func received(err error, status int) error {
	if err == nil || status < 500 || status == http.StatusServiceUnavailable {
		return err
	}
	return &receivedError{err}
}

// statusMarkKey carries where headerTransport notes the HTTP status that
// answered a request sent with the context.
type statusMarkKey struct{}

func withStatusMark(ctx context.Context, m *atomic.Int32) context.Context {
	return context.WithValue(ctx, statusMarkKey{}, m)
}

func statusMarkOf(ctx context.Context) *atomic.Int32 {
	m, _ := ctx.Value(statusMarkKey{}).(*atomic.Int32)
	return m
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

func (c *cancelOnClose) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok {
		markResultless(r)
	}
	return m, err
}

func (c *cancelOnClose) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
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
