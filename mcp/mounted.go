package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// A mounted server's resources, prompts and completions through the
// fleet. Tools are not all an MCP server offers: a worker announces the
// servers it mounts with ServerConfig.ServeResources and is connected to,
// with what each offers besides tools (Servers.Announce, under
// wire.MetaMCPServers), and passes requests
// for those on to the server (ServeMounted, on wire.MCPSubject(instance)).
// The gateway is the one that sends them (gateway_mounted.go): it lists
// and reads them for its MCP clients as its own.
//
// A resources/subscribe passed on subscribes the worker's session with the
// server (a stateful one: a stateless server cannot notify); the server's
// notifications/resources/updated are published as wire.MCPUpdate on
// wire.MCPUpdatedSubject(instance) for the gateways, which tell their
// subscribed sessions (those of resources the worker did not subscribe
// to are dropped). A worker keeps its subscriptions (at most
// maxSubscriptions per server) for as long as it mounts the server,
// subscribing again on a new session after a reconnect; an unsubscribe is
// the gateway's own business (its session stops hearing of the URI), since
// other sessions may still want it.

// Methods passed on to a mounted server (wire.MCPRequest.Method).
const (
	MethodListResources         = "resources/list"
	MethodListResourceTemplates = "resources/templates/list"
	MethodReadResource          = "resources/read"
	MethodSubscribe             = "resources/subscribe"
	MethodListPrompts           = "prompts/list"
	MethodGetPrompt             = "prompts/get"
	MethodComplete              = "completion/complete"
)

// mountedTimeout bounds one request passed on to a server, and
// mountedInFlight the requests a worker passes on to one server at once
// (more are answered busy at once, and the sender tries another worker).
const (
	mountedTimeout  = 30 * time.Second
	mountedInFlight = 64
)

// maxSubscriptions bounds the resources a worker subscribes to on one
// server.
const maxSubscriptions = 1000

// AnnouncedServer is an MCP server as a worker announces it: its name,
// the group of its tools, and what it offers besides tools (from its
// capabilities at initialize).
type AnnouncedServer struct {
	Name string `json:"name"`
	// Group is "basic" or the group the server's tools are in; a session
	// sees the server's resources and prompts when it sees the group.
	Group     string `json:"group"`
	Resources bool   `json:"resources,omitempty"`
	// Subscribe: the server notifies changes of resources subscribed to.
	Subscribe   bool `json:"subscribe,omitempty"`
	Prompts     bool `json:"prompts,omitempty"`
	Completions bool `json:"completions,omitempty"`
}

// Announce is the announcement part of s (for
// discovery.AnnouncerOptions.Meta under wire.MetaMCPServers): the servers
// configured with ServeResources that are up and offer resources, prompts
// or completions, read again for every announcement; nil when there are
// none.
func (s *Servers) Announce() func() any {
	return func() any {
		var out []AnnouncedServer
		for _, c := range s.clients {
			caps := c.caps.Load()
			if !c.cfg.ServeResources || caps == nil || !c.Up() {
				continue
			}
			a := AnnouncedServer{
				Name: c.cfg.Name, Group: c.cfg.Group,
				Resources: caps.Resources != nil, Prompts: caps.Prompts != nil, Completions: caps.Completions != nil,
				Subscribe: caps.Resources != nil && caps.Resources.Subscribe && c.cfg.mode() == ModeStateful,
			}
			if a.Group == "" {
				a.Group = toolkit.BasicGroup
			}
			if a.Resources || a.Prompts || a.Completions {
				out = append(out, a)
			}
		}
		if out == nil {
			return nil
		}
		return out
	}
}

// Forward passes one request (a Method* constant and its MCP params) on
// to the server and returns its result, JSON-shaped. A JSON-RPC error of
// the server is returned as a *jsonrpc.Error; params that do not decode
// into the method's params are an error of their own.
func (c *Client) Forward(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	var do func(context.Context, *sdk.ClientSession) (any, error)
	switch method {
	case MethodListResources:
		do = pass(params, (*sdk.ClientSession).ListResources)
	case MethodListResourceTemplates:
		do = pass(params, (*sdk.ClientSession).ListResourceTemplates)
	case MethodReadResource:
		do = pass(params, (*sdk.ClientSession).ReadResource)
	case MethodListPrompts:
		do = pass(params, (*sdk.ClientSession).ListPrompts)
	case MethodGetPrompt:
		do = pass(params, (*sdk.ClientSession).GetPrompt)
	case MethodComplete:
		do = pass(params, (*sdk.ClientSession).Complete)
	case MethodSubscribe:
		do = pass(params, c.subscribe)
	default:
		return nil, fmt.Errorf("the method %q is not passed on to MCP servers", method)
	}
	var res any
	err := c.withSession(ctx, true, func(cs *sdk.ClientSession) error {
		// On the shared session, so that what the server sends meanwhile
		// is not taken for a call's (relay.go).
		defer c.enter(cs, &inflight{})()
		var err error
		res, err = do(ctx, cs)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, remarshal(res, &out)
}

// uncachedKey is the one key the go-sdk's session caches the results of
// resources/read, resources/list, resources/templates/list and
// prompts/list under (uncachedResults); Forward refuses it as a URI or
// cursor (reserved), so no request is ever answered from that cache.
const uncachedKey = "\x00toolbus: not cached"

// reserved refuses decoded params whose URI or cursor is uncachedKey.
// The decoded ones, not the map Forward is given: they decode as
// encoding/json does, a key matching its field whatever its case ("URI",
// "Cursor"), and the session would answer such a request with the last
// result another client had.
func reserved(p any) error {
	var k, v string
	switch p := p.(type) {
	case *sdk.ReadResourceParams:
		k, v = "uri", p.URI
	case *sdk.ListResourcesParams:
		k, v = "cursor", p.Cursor
	case *sdk.ListResourceTemplatesParams:
		k, v = "cursor", p.Cursor
	case *sdk.ListPromptsParams:
		k, v = "cursor", p.Cursor
	}
	if v != uncachedKey {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: %s %q is reserved", k, v)}
}

// uncachedResults is a sending middleware of the go-sdk client that keeps
// its session's caches (SEP-2549, protocol 2026-07-28) from holding what
// a worker passes on for gateways. The go-sdk caches every resources/read
// result under its URI, and every page of the lists under its cursor,
// whatever its ttlMs, and lets an entry go only when the same key is
// asked again or the server says it changed: a long-lived shared
// session kept each distinct resource an MCP client read through the
// fleet, for ever. The cache takes the key from the request's params
// once the answer is back, so the params are given uncachedKey then: at
// most one result of each kind stays, and no later request finds it.
// (Answers are not served from a cache either: the fleet's gateways
// have their own clients, whose caching is theirs.)
//
// The tools listed are cached too, each page under its cursor, and a
// server paging with new cursors each time had every page of every
// re-listing kept. But the go-sdk reads the tools cached to set a call's
// Mcp-Param headers: every page goes under toolsKey, so that one entry
// is kept, and the last page of a listing (listAll) is handed on with
// the tools of the pages before it, so that entry holds the whole
// listing (mergedPage).
func uncachedResults(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		switch p := req.GetParams().(type) {
		case *sdk.ListToolsParams:
			p.Cursor = toolsKey
			if page, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				res = mergedPage(ctx, page)
			}
		case *sdk.ReadResourceParams:
			p.URI = uncachedKey
		case *sdk.ListResourcesParams:
			p.Cursor = uncachedKey
		case *sdk.ListResourceTemplatesParams:
			p.Cursor = uncachedKey
		case *sdk.ListPromptsParams:
			p.Cursor = uncachedKey
		}
		return res, err
	}
}

// toolsKey is the one key the go-sdk's session caches tools/list pages
// under (uncachedResults); a listing refuses it as a cursor (listAll).
const toolsKey = "\x00toolbus: the tools listed"

// toolListing is the state of one listing (listAll) for uncachedResults,
// in the context of its requests.
type toolListing struct {
	tools []*sdk.Tool // of the pages read so far
	// merged: the last page read was handed on after tools (mergedPage)
	merged bool
}

type toolListingKey struct{}

// mergedPage is page, or, when it is the last page of a listing, a copy
// of it that holds the tools of the pages before it first: the result
// the go-sdk caches (the last page listed) then holds them all.
func mergedPage(ctx context.Context, page *sdk.ListToolsResult) *sdk.ListToolsResult {
	l, _ := ctx.Value(toolListingKey{}).(*toolListing)
	if l == nil {
		return page
	}
	l.merged = page.NextCursor == "" && len(l.tools) > 0
	if !l.merged {
		return page
	}
	all := *page
	all.Tools = append(slices.Clone(l.tools), page.Tools...)
	return &all
}

// pass adapts a ClientSession method to Forward: params decode into the
// method's params type first.
func pass[P, R any](params map[string]any, method func(*sdk.ClientSession, context.Context, *P) (R, error)) func(context.Context, *sdk.ClientSession) (any, error) {
	return func(ctx context.Context, cs *sdk.ClientSession) (any, error) {
		p := new(P)
		if params != nil {
			if err := remarshal(params, p); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
			}
		}
		if err := reserved(p); err != nil {
			return nil, err
		}
		return method(cs, ctx, p)
	}
}

// subscribe subscribes the session to a resource and records it, to
// subscribe again on the next session.
func (c *Client) subscribe(cs *sdk.ClientSession, ctx context.Context, p *sdk.SubscribeParams) (any, error) {
	if c.cfg.mode() == ModeStateless {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("the MCP server %q is stateless: it cannot notify resource updates", c.cfg.Name)}
	}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[string]bool{}
	}
	known := c.subs[p.URI]
	full := len(c.subs) >= maxSubscriptions
	c.mu.Unlock()
	if known {
		return struct{}{}, nil
	}
	if full {
		// A JSON-RPC error: an answer, not a failed session (withSession
		// would reconnect).
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("the worker is subscribed to %d resources of the MCP server %q already", maxSubscriptions, c.cfg.Name)}
	}
	if err := cs.Subscribe(ctx, p); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.subs[p.URI] = true
	c.mu.Unlock()
	return struct{}{}, nil
}

// subscribed reports whether the worker subscribed to the resource uri.
func (c *Client) subscribed(uri string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subs[uri]
}

// resubscribe subscribes a new session to the resources the worker
// subscribed to before.
func (c *Client) resubscribe(cs *sdk.ClientSession) {
	c.mu.Lock()
	uris := make([]string, 0, len(c.subs))
	for uri := range c.subs {
		uris = append(uris, uri)
	}
	c.mu.Unlock()
	if len(uris) == 0 {
		return
	}
	c.goBG(func() {
		ctx, cancel := context.WithTimeout(c.life, mountedTimeout)
		defer cancel()
		for _, uri := range uris {
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				// Forgotten: the next resources/subscribe tries again.
				c.mu.Lock()
				delete(c.subs, uri)
				c.mu.Unlock()
				c.log.Warn("mcp: subscribing to a resource again on a new session", "uri", uri, "err", err)
			}
		}
	})
}

// ServeMounted answers wire.MCPRequests on wire.MCPSubject(instance)
// (plain subscription) by passing them on to the named server of servers
// (Client.Forward), until the subscription is unsubscribed. The reply is
// the server's result, or its JSON-RPC error with the server's code, or
// (code 0) why the worker has no answer: no such server, the server
// unreachable, too many requests in flight, a result larger than the
// connection's maximum payload. msgpack, or JSON both ways when the
// request has Content-Type: application/json. A cancel
// (wire.MCPCancelled) ends the request it names; it is answered only
// when it came with a reply subject, with an empty reply ({}).
func ServeMounted(nc *nats.Conn, instance string, servers *Servers, logger *slog.Logger) (*nats.Subscription, error) {
	switch {
	case nc == nil:
		return nil, errors.New("mcp: ServeMounted: nil connection")
	case servers == nil:
		return nil, errors.New("mcp: ServeMounted: nil servers")
	case !toolkit.ValidName(instance):
		return nil, fmt.Errorf("mcp: ServeMounted: instance %q is not a subject token ([A-Za-z0-9_-]+)", instance)
	}
	if logger == nil {
		logger = slog.Default()
	}
	for _, c := range servers.clients {
		server := c.cfg.Name
		c.setUpdated(func(uri string) {
			data, err := wire.Msgpack.Marshal(&wire.MCPUpdate{Server: server, URI: uri})
			if err == nil {
				err = nc.Publish(wire.MCPUpdatedSubject(instance), data)
			}
			if err != nil {
				logger.Warn("mcp: a resource update not published", "server", server, "uri", uri, "err", err)
			}
		})
	}
	sems := map[*Client]chan struct{}{} // per server: a slow one holds up only its own
	for _, c := range servers.clients {
		sems[c] = make(chan struct{}, mountedInFlight)
	}
	// The requests running that carry an id, by server and id, for their
	// cancels (wire.MCPCancelled). Registered on the subscription's
	// goroutine, so a cancel, which comes after its request on the same
	// subject, finds it.
	var runMu sync.Mutex
	running := map[mountedKey]context.CancelFunc{}
	sub, err := nc.Subscribe(wire.MCPSubject(instance), func(m *nats.Msg) {
		var req wire.MCPRequest
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &req); err != nil {
			respondMounted(nc, m, &wire.MCPReply{Error: fmt.Sprintf("undecodable request: %v", err)}, logger)
			return
		}
		if req.Method == wire.MCPCancelled {
			id, _ := req.Params["requestId"].(string)
			runMu.Lock()
			cancel := running[mountedKey{req.Server, id}]
			runMu.Unlock()
			if cancel != nil {
				cancel()
			}
			// A cancel is a notification: the gateway publishes it with
			// no reply subject, and it is not answered. One sent as a
			// request (nats req, a peer forwarding with Request) is taken
			// all the same and answered {} at once, found or not, rather
			// than left to wait out its sender's timeout.
			if m.Reply != "" {
				respondMounted(nc, m, &wire.MCPReply{}, logger)
			}
			return
		}
		c, ok := servers.Get(req.Server)
		if !ok || !c.cfg.ServeResources {
			respondMounted(nc, m, &wire.MCPReply{Error: fmt.Sprintf("no MCP server named %q serves resources on this worker (serve_resources)", req.Server)}, logger)
			return
		}
		sem := sems[c]
		select {
		case sem <- struct{}{}:
		default:
			respondMounted(nc, m, &wire.MCPReply{Error: fmt.Sprintf("busy: %d requests to the MCP server %q in flight on this worker", mountedInFlight, req.Server)}, logger)
			return
		}
		ctx, cancel := context.WithTimeout(c.life, mountedTimeout)
		key := mountedKey{req.Server, req.ID}
		if req.ID != "" {
			runMu.Lock()
			if _, dup := running[key]; dup {
				key.id = "" // the first of the id keeps its cancel
			} else {
				running[key] = cancel
			}
			runMu.Unlock()
		}
		release := func() {
			if key.id != "" {
				runMu.Lock()
				delete(running, key)
				runMu.Unlock()
			}
			cancel()
			<-sem
		}
		// Not on the subscription's goroutine: one slow server must not
		// hold up the requests for the others.
		if !c.goBG(func() {
			defer release()
			respondMounted(nc, m, mountedReply(c.Forward(ctx, req.Method, req.Params)), logger)
		}) {
			release()
			respondMounted(nc, m, &wire.MCPReply{Error: fmt.Sprintf("the MCP server %q has been shut down in this worker", req.Server)}, logger)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("mcp: ServeMounted: %w", err)
	}
	return sub, nil
}

// mountedKey names a request passed on to a server for its cancel: the
// server and the request's id (wire.MCPRequest.ID).
type mountedKey struct{ server, id string }

// mountedReply is the reply carrying Forward's outcome.
func mountedReply(res map[string]any, err error) *wire.MCPReply {
	if err == nil && nestedDeeper(res, maxMetadataDepth) {
		// The gateway's decoder would refuse it (wire.MaxDepth).
		return &wire.MCPReply{Error: fmt.Sprintf("the server's answer nests deeper than %d levels, more than the fleet carries", maxMetadataDepth)}
	}
	if err == nil {
		return &wire.MCPReply{Result: res}
	}
	var we *jsonrpc.Error
	if isProtocolError(err) && errors.As(err, &we) {
		return &wire.MCPReply{Code: we.Code, Error: we.Message}
	}
	return &wire.MCPReply{Error: err.Error()}
}

// respondMounted sends reply; one too large for the connection is
// replaced by an error saying so.
func respondMounted(nc *nats.Conn, m *nats.Msg, reply *wire.MCPReply, logger *slog.Logger) {
	err := wire.RespondFitting(nc, m, reply, func(max int64) wire.Message {
		return &wire.MCPReply{Error: fmt.Sprintf("the server's answer is larger than the NATS maximum payload (%d bytes)", max)}
	})
	if err != nil && !errors.Is(err, wire.ErrNoReplySubject) {
		logger.Warn("mcp: a request to an MCP server: reply not sent", "err", err)
	}
}

// setUpdated sets who is told of the server's resource updates.
func (c *Client) setUpdated(f func(uri string)) { c.updated.Store(&f) }
