package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/toolkit"
)

// DefaultGatewaySessionTimeout closes an HTTP session of the gateway that
// has had no request for that long.
const DefaultGatewaySessionTimeout = 30 * time.Minute

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
	// Instructions are sent to MCP clients when they initialize.
	Instructions string
	// Bucket is the fleet's group-state KV bucket; "" means
	// bus.DefaultGroupsBucket. It must be the bucket the workers use.
	Bucket string
	// Fleet configures the discovery view (bus.NewFleet).
	Fleet bus.FleetConfig
	// Client configures the bus client the calls go through.
	Client *bus.ClientOptions
	// CallTimeout bounds every call; 0 means no bound beyond the MCP
	// client's own cancellation.
	CallTimeout time.Duration
	// SessionTimeout closes an idle HTTP session; 0 means
	// DefaultGatewaySessionTimeout, negative means never.
	SessionTimeout time.Duration
	// DisableLocalhostProtection turns off the go-sdk's DNS-rebinding
	// guard (a request on a loopback address with a non-loopback Host
	// header gets 403); needed behind a reverse proxy on the same host.
	DisableLocalhostProtection bool
	// Logger receives skipped tools and failed refreshes; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Gateway is an MCP server whose tools are the fleet's: every MCP session
// is a toolbus session, it lists the tools its active groups allow
// (reset_tools included when the fleet has groups), is told
// notifications/tools/list_changed when that changes, and its tools/call
// requests go over the bus.
//
// Serve it over Streamable HTTP (a Gateway is an http.Handler; see also
// ListenAndServe) or stdio (ServeStdio). All methods are safe for
// concurrent use.
type Gateway struct {
	opts     GatewayOptions
	log      *slog.Logger
	sdkLog   *slog.Logger // the go-sdk's own log: warnings and errors only
	client   *bus.Client
	fleet    *bus.Fleet
	state    toolkit.GroupState
	http     *sdk.StreamableHTTPHandler
	base     *sdk.Server // answers the HTTP handler's per-request version check
	unwatch  func()
	watcher  jetstream.KeyWatcher // the group-state bucket's updates
	changed  chan struct{}
	done     chan struct{}
	loopDone chan struct{}

	mu       sync.Mutex
	sessions map[*gatewaySession]*sdk.ServerSession
	closed   bool
}

// gatewaySession is one MCP session: its own go-sdk Server, holding the
// tools the session may see, so that adding and removing them notifies
// exactly that session.
type gatewaySession struct {
	g   *Gateway
	id  string
	srv *sdk.Server

	mu    sync.Mutex        // serialises refreshes
	tools map[string]string // registered tool name → its JSON, to spot changes
}

// NewGateway builds a gateway on nc: a bus client for the calls, a Fleet
// for the tools (discovery), and the group-state bucket for each session's
// active groups. Close releases them; nc stays open.
func NewGateway(ctx context.Context, nc *nats.Conn, opts *GatewayOptions) (*Gateway, error) {
	if nc == nil {
		return nil, errors.New("toolbus/mcp: NewGateway needs a NATS connection")
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
		return nil, fmt.Errorf("toolbus/mcp: NewGateway: negative call timeout %v", o.CallTimeout)
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultGatewaySessionTimeout
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("toolbus/mcp: gateway: %w", err)
	}
	state, err := bus.NewKVState(ctx, js, bus.KVStateConfig{Bucket: o.Bucket})
	if err != nil {
		return nil, fmt.Errorf("toolbus/mcp: gateway: group state: %w", err)
	}
	client, err := bus.NewClient(nc, o.Client)
	if err != nil {
		return nil, fmt.Errorf("toolbus/mcp: gateway: %w", err)
	}
	if o.Fleet.Logger == nil {
		o.Fleet.Logger = o.Logger
	}
	fleet, err := bus.NewFleet(ctx, nc, o.Fleet)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("toolbus/mcp: gateway: %w", err)
	}
	g := &Gateway{
		opts: o, log: o.Logger, client: client, fleet: fleet, state: state,
		sdkLog:   slog.New(minLevel{o.Logger.Handler(), slog.LevelWarn}),
		changed:  make(chan struct{}, 1),
		done:     make(chan struct{}),
		loopDone: make(chan struct{}),
		sessions: map[*gatewaySession]*sdk.ServerSession{},
	}
	g.base = g.newServer("", nil)
	timeout := o.SessionTimeout
	if timeout < 0 {
		timeout = 0
	}
	g.http = sdk.NewStreamableHTTPHandler(g.getServer, &sdk.StreamableHTTPOptions{
		SessionTimeout:             timeout,
		DisableLocalhostProtection: o.DisableLocalhostProtection,
		Logger:                     g.sdkLog,
	})
	bucket := o.Bucket
	if bucket == "" {
		bucket = bus.DefaultGroupsBucket
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err == nil {
		g.watcher, err = kv.WatchAll(context.Background(), jetstream.UpdatesOnly())
	}
	if err != nil {
		fleet.Close()
		client.Close()
		return nil, fmt.Errorf("toolbus/mcp: gateway: watching the group state: %w", err)
	}
	g.unwatch = fleet.OnChange(g.signal)
	go g.loop()
	go g.watchGroups()
	return g, nil
}

// watchGroups refreshes a session whose activation was written by anyone
// (reset_tools through another gateway or straight on the bus, toolctl
// groups set), at least to the revision written.
func (g *Gateway) watchGroups() {
	for e := range g.watcher.Updates() {
		if e == nil {
			continue
		}
		session, err := bus.ParseSessionKey(e.Key())
		if err != nil {
			continue
		}
		g.mu.Lock()
		var hit []*gatewaySession
		for s := range g.sessions {
			if s.id == session {
				hit = append(hit, s)
			}
		}
		g.mu.Unlock()
		for _, s := range hit {
			s.refresh(context.Background(), false, e.Revision())
		}
	}
}

// Fleet returns the discovery view the gateway lists tools from.
func (g *Gateway) Fleet() *bus.Fleet { return g.fleet }

// Close ends every MCP session and stops listening to the fleet. It does
// not close the NATS connection.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	var live []*sdk.ServerSession
	for _, ss := range g.sessions {
		live = append(live, ss)
	}
	g.mu.Unlock()
	g.unwatch()
	g.watcher.Stop()
	close(g.done)
	<-g.loopDone
	for _, ss := range live {
		ss.Close()
	}
	return errors.Join(g.fleet.Close(), g.client.Close())
}

// ServeHTTP serves MCP over Streamable HTTP (stateful: the Mcp-Session-Id
// the gateway assigns is the toolbus session). Mount it at any path; MCP
// clients conventionally use /mcp.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Session-Id") == "" {
		// A request that may open a session: getServer creates its server
		// once, however often the go-sdk handler asks.
		r = r.WithContext(context.WithValue(r.Context(), pendingKey{}, &pendingSession{}))
	}
	g.http.ServeHTTP(w, r)
}

type pendingKey struct{}

type pendingSession struct {
	once sync.Once
	s    *gatewaySession
}

func (g *Gateway) getServer(r *http.Request) *sdk.Server {
	p, _ := r.Context().Value(pendingKey{}).(*pendingSession)
	if p == nil {
		return g.base // a request of a known session: only its version is checked here
	}
	p.once.Do(func() { p.s = g.newSession(r.Context(), newSessionID()) })
	return p.s.srv
}

// ListenAndServe serves Streamable HTTP on addr at /mcp until ctx ends,
// then shuts the listener down (requests in flight are cancelled). It
// returns once the server has stopped.
func (g *Gateway) ListenAndServe(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("toolbus/mcp: gateway: %w", err)
	}
	return g.ServeListener(ctx, l)
}

// ServeListener is ListenAndServe on a listener the caller opened (for
// example on port 0, to learn the address first). It closes l.
func (g *Gateway) ServeListener(ctx context.Context, l net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", g)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		// Requests end with ctx, open event streams and calls included
		// (calls end interrupted), so shutting down does not wait on them.
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("toolbus/mcp: gateway: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		err = hs.Close()
	}
	<-errc
	return err
}

// ServeStdio serves one MCP session on the process's stdin and stdout
// until the client goes away or ctx ends. session is the toolbus session
// the MCP session is; "" means a new random one. Give the same session to
// later processes to keep its group activation.
func (g *Gateway) ServeStdio(ctx context.Context, session string) error {
	return g.Serve(ctx, &sdk.StdioTransport{}, session)
}

// Serve serves one MCP session on any go-sdk transport (ServeStdio uses
// sdk.StdioTransport), as ServeStdio does.
func (g *Gateway) Serve(ctx context.Context, t sdk.Transport, session string) error {
	if session == "" {
		session = newSessionID()
	}
	s := g.newSession(ctx, session)
	ss, err := s.srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("toolbus/mcp: gateway: %w", err)
	}
	if !g.track(s, ss) {
		ss.Close()
		return errors.New("toolbus/mcp: gateway closed")
	}
	stop := context.AfterFunc(ctx, func() { ss.Close() })
	defer stop()
	err = ss.Wait()
	if ctx.Err() != nil || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	return err
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (g *Gateway) newServer(id string, s *gatewaySession) *sdk.Server {
	opts := &sdk.ServerOptions{
		Instructions: g.opts.Instructions,
		Logger:       g.sdkLog,
		// Advertise tools (with list changes) even while the list is empty.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
	}
	if id != "" {
		opts.GetSessionID = func() string { return id }
	}
	if s != nil {
		opts.InitializedHandler = func(_ context.Context, req *sdk.InitializedRequest) {
			if req.Session != nil && !g.track(s, req.Session) {
				req.Session.Close()
			}
		}
	}
	return sdk.NewServer(g.opts.Implementation, opts)
}

// newSession creates a session's server with its current tools. Nobody
// is connected yet, so filling it sends no notification.
func (g *Gateway) newSession(ctx context.Context, id string) *gatewaySession {
	s := &gatewaySession{g: g, id: id, tools: map[string]string{}}
	s.srv = g.newServer(id, s)
	s.refresh(ctx, true, 0)
	return s
}

// track registers a connected session for list-change notifications and
// forgets it when it ends. It is false when the gateway is closed.
func (g *Gateway) track(s *gatewaySession, ss *sdk.ServerSession) bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	if _, ok := g.sessions[s]; ok {
		g.mu.Unlock()
		return true
	}
	g.sessions[s] = ss
	g.mu.Unlock()
	go func() {
		ss.Wait()
		g.mu.Lock()
		delete(g.sessions, s)
		g.mu.Unlock()
	}()
	// The fleet may have changed since the session's tools were read.
	go s.refresh(context.Background(), false, 0)
	return true
}

func (g *Gateway) signal() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// loop refreshes every session when the fleet changes, one change at a
// time (changes coalesce).
func (g *Gateway) loop() {
	defer close(g.loopDone)
	for {
		select {
		case <-g.done:
			return
		case <-g.changed:
		}
		g.mu.Lock()
		live := make([]*gatewaySession, 0, len(g.sessions))
		for s := range g.sessions {
			live = append(live, s)
		}
		g.mu.Unlock()
		for _, s := range live {
			s.refresh(context.Background(), false, 0)
		}
	}
}

// refresh makes the session's server hold exactly the tools the session
// may see now (its group state at least at revision minRev, and at least
// at its last reset_tools through the gateway); the go-sdk sends
// list_changed for any difference. When the group state cannot be read
// the list is left as it is (initial: the groups active by default).
func (s *gatewaySession) refresh(ctx context.Context, initial bool, minRev uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.g
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gatewaySyncTimeout)
	defer cancel()
	schemas, err := g.fleet.SessionSchemas(ctx, g.state, s.id, max(minRev, g.client.Revision(s.id)))
	if err != nil {
		g.log.Warn("toolbus/mcp: gateway: cannot read the session's groups; its tool list is not refreshed",
			"session", s.id, "err", err)
		if !initial {
			return
		}
		schemas = g.fleet.Schemas(defaultGroups(g.fleet.Groups()))
	}
	want := make(map[string]*sdk.Tool, len(schemas))
	order := make([]string, 0, len(schemas))
	for _, fs := range schemas {
		t, err := g.mcpTool(fs)
		if err != nil {
			g.log.Warn("toolbus/mcp: gateway: skipping a tool", "tool", fs.Function.Name, "err", err)
			continue
		}
		want[t.Name] = t
		order = append(order, t.Name)
	}
	var gone []string
	for name := range s.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.tools, name)
		}
	}
	for _, name := range order {
		t := want[name]
		b, _ := json.Marshal(t)
		if s.tools[name] == string(b) {
			continue
		}
		if err := addTool(s.srv, t, s.call); err != nil {
			g.log.Warn("toolbus/mcp: gateway: skipping a tool", "tool", name, "err", err)
			continue
		}
		s.tools[name] = string(b)
	}
}

// addTool is sdk.Server.AddTool, which panics on a schema it cannot use.
func addTool(srv *sdk.Server, t *sdk.Tool, h sdk.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

func defaultGroups(groups []toolkit.Group) []string {
	var active []string
	for _, g := range groups {
		if g.Active {
			active = append(active, g.Name)
		}
	}
	return active
}

// mcpTool is a fleet tool as MCP lists it: the same name, description and
// input schema, and annotations from its flags.
func (g *Gateway) mcpTool(fs toolkit.FunctionSchema) (*sdk.Tool, error) {
	params := fs.Function.Parameters
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	if params["type"] != "object" {
		return nil, fmt.Errorf("input schema type is %v, MCP needs \"object\"", params["type"])
	}
	t := &sdk.Tool{Name: fs.Function.Name, Description: fs.Function.Description, InputSchema: params}
	if ft, ok := g.fleet.Tool(fs.Function.Name); ok {
		t.Annotations = annotations(ft.ReadOnly, ft.IdempotencyLevel())
	}
	return t, nil
}

// annotations maps a tool's flags to MCP hints: read-only → readOnlyHint;
// read-only, idempotent or side-effect free → idempotentHint. destructiveHint is not
// set (its MCP default, true, is the safe reading of "unknown") except
// for read-only tools, which destroy nothing.
func annotations(readOnly bool, level toolkit.Idempotency) *sdk.ToolAnnotations {
	a := &sdk.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: readOnly || level.Retryable()}
	if readOnly {
		no := false
		a.DestructiveHint = &no
	}
	return a
}

// call runs one tools/call over the bus in the session.
func (s *gatewaySession) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	g := s.g
	name := req.Params.Name
	input, err := callArguments(req.Params.Arguments)
	if err != nil {
		return s.result(&toolkit.Response{State: toolkit.StateError, Code: toolkit.CodeInvalidInput,
			Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "InvalidInput: " + err.Error()}}}), nil
	}
	if g.opts.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.opts.CallTimeout)
		defer cancel()
	}
	token := req.Params.GetProgressToken()
	var final *toolkit.Response
	for ev := range g.client.Call(ctx, toolkit.ToolCall{Name: name, Input: input, Session: s.id}) {
		switch {
		case ev.Progress != nil && token != nil && req.Session != nil:
			p := ev.Progress
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message,
			}); err != nil {
				g.log.Debug("toolbus/mcp: gateway: progress not delivered", "tool", name, "err", err)
			}
		case ev.Final != nil:
			final = ev.Final
		}
	}
	if final == nil { // the bus client always ends with a final; never answer nothing
		final = &toolkit.Response{State: toolkit.StateError, Code: toolkit.CodeInternal,
			Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "InternalError: the call ended without a final response"}}}
	}
	if name == toolkit.MetaToolName && final.State == toolkit.StateSuccess {
		s.refresh(ctx, false, 0) // the client now carries the new revision
	}
	return s.result(final), nil
}

// callArguments decodes tools/call arguments: a JSON object, or nothing.
func callArguments(raw any) (map[string]any, error) {
	var b []byte
	switch v := raw.(type) {
	case nil:
		return map[string]any{}, nil
	case json.RawMessage:
		b = v
	case map[string]any:
		return v, nil
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("arguments: %v", err)
		}
	}
	if len(b) == 0 || string(b) == "null" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object: %v", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// result converts a final response to a CallToolResult (see the package
// doc, section Gateway).
func (s *gatewaySession) result(r *toolkit.Response) *sdk.CallToolResult {
	res := &sdk.CallToolResult{Content: []sdk.Content{}}
	for i, b := range r.Content {
		res.Content = append(res.Content, blockContent(r.ID, i, b))
	}
	res.IsError = r.State != toolkit.StateSuccess && r.State != ""
	meta := sdk.Meta{GatewayMetaState: string(r.State), GatewayMetaSession: s.id}
	if r.Code != "" {
		meta[GatewayMetaCode] = string(r.Code)
	}
	if res.IsError && len(res.Content) == 0 {
		res.Content = append(res.Content, &sdk.TextContent{Text: fmt.Sprintf("the call ended %s (%s)", r.State, r.Code)})
	}
	md := make(map[string]any, len(r.Metadata))
	for k, v := range r.Metadata {
		if k == metaStructuredContent {
			if obj, ok := jsonValue(v).(map[string]any); ok {
				res.StructuredContent = obj
				continue
			}
		}
		md[k] = jsonValue(v)
	}
	if len(md) > 0 {
		meta[GatewayMetaMetadata] = md
	}
	res.Meta = meta
	return res
}

// jsonValue returns v as encoding/json sees it (maps with string keys,
// float64 numbers), or its fmt rendering when it has no JSON form.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Sprint(v)
	}
	return out
}

// blockContent converts one block: text → text; base64 data → image or
// audio by media type, any other type → an embedded blob resource; URL
// data → a resource link.
func blockContent(callID string, i int, b toolkit.Block) sdk.Content {
	if b.Type != toolkit.BlockData {
		return &sdk.TextContent{Text: b.Text}
	}
	if b.Data == "" && b.URL != "" {
		name := b.Name
		if name == "" {
			name = b.URL
		}
		return &sdk.ResourceLink{URI: b.URL, Name: name, MIMEType: b.MediaType}
	}
	raw, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		return &sdk.TextContent{Text: fmt.Sprintf("[data block %q (%s) is not valid base64: %v]", b.Name, b.MediaType, err)}
	}
	switch mediaClass(b.MediaType) {
	case "image":
		return &sdk.ImageContent{Data: raw, MIMEType: b.MediaType}
	case "audio":
		return &sdk.AudioContent{Data: raw, MIMEType: b.MediaType}
	}
	uri := b.Name
	if !hasScheme(uri) {
		id := b.ID
		if id == "" {
			id = fmt.Sprintf("%s-%d", callID, i)
		}
		uri = "toolbus:data/" + id
	}
	return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: b.MediaType, Blob: raw}}
}

func mediaClass(mt string) string {
	for i := 0; i < len(mt); i++ {
		if mt[i] == '/' {
			return mt[:i]
		}
	}
	return ""
}

// hasScheme reports whether s starts with a URI scheme ("x:").
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			return i > 0
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return false
}

// minLevel drops records below a level: the go-sdk logs every session's
// connect and disconnect at info.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
