package mcp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// Mounted servers' resources, prompts and completions through the
// gateway. The MCP servers the fleet's workers mount with ServeResources
// (announced under wire.MetaMCPServers) offer a session their resources, resource
// templates, prompts and completions alongside its skills, following the
// session's groups as their tools do: a server is visible when its group
// is basic or active. Each request goes over the bus to a worker mounting
// the server (wire.MCPSubject, mounted.go), trying the next one when a
// worker cannot answer.
//
// Names follow the tools': a server's prompt is mcp__<server>__<prompt>,
// and a resource's name (not its URI) mcp__<server>__<name>. URIs stay as
// the server gives them (they are addresses the server's own results
// use); when two visible servers list the same URI the first in order
// wins. A server in GatewayOptions.ExposeServers keeps its own prompt and
// resource names unless they collide with a skill's or an earlier exposed
// server's, which keep the prefix. Order: exposed servers in
// ExposeServers order, then the others by name. A read of a URI goes to
// each server offering resources in that order until one does not answer
// "not found"; a completion for a resource template goes to the server
// that lists the template.
//
// The lists are asked for when the client asks (so they are current), not
// cached; there are no list_changed notifications for them.
//
// resources/subscribe goes to the visible servers offering subscriptions
// that list the URI, or when none does (a template's URI) to the first that
// takes it (each through one worker mounting it); the workers publish their servers' updates (wire.MCPUpdatedSubject)
// and the gateway tells the sessions subscribed to the URI, each from a
// queue and a goroutine of its own: a client that stops reading delays
// its own updates only. At most maxSessionUpdates URIs (64 KiB of them)
// wait for one session; an update of a URI already waiting adds nothing,
// and past the bound new ones are dropped. A subscribe to a URI the
// session holds already is answered at once without asking anyone.
// Unsubscribing stops the session hearing of the URI; the worker keeps
// its own subscription (others may want it).

// mountedServer is a server some of the fleet's live workers mount.
type mountedServer struct {
	AnnouncedServer
	exposed   bool
	instances []string
}

// maxMountedPages and maxMountedItems bound what the gateway reads of one
// server's listing for one list request.
const (
	maxMountedPages = 100
	maxMountedItems = 10_000
)

// mountedServers returns the servers the session sees, in order, each
// with the instances that mount it in a group the session sees (two
// workers may put one server in different groups).
func (s *gatewaySession) mountedServers(ctx context.Context) ([]*mountedServer, error) {
	g := s.g
	type mounting struct {
		instance string
		server   AnnouncedServer
	}
	var all []mounting
	for _, in := range g.fleet.Instances() {
		var ann []AnnouncedServer
		if ok, err := in.DecodeMeta(wire.MetaMCPServers, &ann); !ok || err != nil {
			continue
		}
		for _, a := range ann {
			all = append(all, mounting{in.ID, a})
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	active, err := s.c.ActiveGroups(ctx, s.id, 0)
	if err != nil {
		return nil, err
	}
	byName := map[string]*mountedServer{}
	var out []*mountedServer
	for _, a := range all {
		if a.server.Group != toolkit.BasicGroup && !slices.Contains(active, a.server.Group) {
			continue
		}
		m := byName[a.server.Name]
		if m == nil {
			m = &mountedServer{AnnouncedServer: a.server, exposed: slices.Contains(g.opts.ExposeServers, a.server.Name)}
			byName[a.server.Name] = m
			out = append(out, m)
		}
		m.instances = append(m.instances, a.instance)
	}
	rank := func(m *mountedServer) int {
		if i := slices.Index(g.opts.ExposeServers, m.Name); i >= 0 {
			return i
		}
		return len(g.opts.ExposeServers)
	}
	slices.SortFunc(out, func(a, b *mountedServer) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// ask passes one request to a worker mounting m, starting at a random one
// (spreading the load) and trying the others while a worker has no
// answer; the server's own JSON-RPC error is returned as one.
func (s *gatewaySession) ask(ctx context.Context, m *mountedServer, method string, params any, result any) error {
	var p map[string]any
	if err := remarshal(params, &p); err != nil {
		return err
	}
	req := &wire.MCPRequest{Server: m.Name, Method: method, Params: p, ID: nuid.Next()}
	data, err := wire.Msgpack.Marshal(req)
	if err != nil {
		return err
	}
	// A worker that died with the request gets no "no responders": bound
	// the wait to the worker's own bound and some.
	ctx, cancel := context.WithTimeout(ctx, mountedTimeout+5*time.Second)
	defer cancel()
	var errs []error
	start := rand.IntN(len(m.instances))
	for i := range m.instances {
		id := m.instances[(start+i)%len(m.instances)]
		msg, err := s.g.nc.RequestWithContext(ctx, wire.MCPSubject(id), data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			if ctx.Err() != nil {
				// Given up on (the client cancelled, the session or the
				// gateway ended): the worker's request to the server need
				// not run on for its 30 s.
				s.g.cancelMounted(id, req)
				break
			}
			continue
		}
		var reply wire.MCPReply
		switch err := wire.CodecOf(msg.Header).Unmarshal(msg.Data, &reply); {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: undecodable reply: %w", id, err))
		case reply.Code != 0:
			return &jsonrpc.Error{Code: reply.Code, Message: reply.Error}
		case reply.Error != "":
			errs = append(errs, fmt.Errorf("%s: %s", id, reply.Error))
		default:
			return remarshal(reply.Result, result)
		}
	}
	return fmt.Errorf("mcp: gateway: %s of the MCP server %q: %w", method, m.Name, errors.Join(errs...))
}

// cancelMounted cancels on the worker instance a request ask gave up on
// (wire.MCPCancelled); a worker that has answered it already ignores the
// cancel.
func (g *Gateway) cancelMounted(instance string, req *wire.MCPRequest) {
	data, err := wire.Msgpack.Marshal(&wire.MCPRequest{Server: req.Server, Method: wire.MCPCancelled, Params: map[string]any{"requestId": req.ID}})
	if err == nil {
		err = g.nc.Publish(wire.MCPSubject(instance), data)
	}
	if err != nil {
		g.log.Warn("mcp: gateway: cancelling a request to a mounted server", "server", req.Server, "instance", instance, "err", err)
	}
}

// notFound reports a server's answer that it has no such resource (MCP's
// -32002, or -32602 as the go-sdk sends it).
func notFound(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && (we.Code == -32002 || we.Code == sdk.CodeResourceNotFound)
}

// mountedName is a server's name for something (a prompt, a resource)
// as the session lists it: its own when the server is exposed and the
// name is not taken (taken records the names given out so far), else
// prefixed.
func mountedName(m *mountedServer, own string, taken map[string]bool) string {
	if m.exposed && !taken[own] {
		taken[own] = true
		return own
	}
	return ToolName(m.Name, own)
}

// mountedMiddleware answers the resource, prompt and completion requests
// of the session: its skills' (the session's own server, next) together
// with the mounted servers'.
func (s *gatewaySession) mountedMiddleware(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (_ sdk.Result, handled bool, _ error) {
	switch r := req.(type) {
	case *sdk.ListPromptsRequest:
		if r.Params != nil && r.Params.Cursor != "" {
			return nil, false, nil
		}
		res, err := s.listPrompts(ctx, method, req, next)
		return res, true, err
	case *sdk.GetPromptRequest:
		res, err := s.getMountedPrompt(ctx, method, r, next)
		return res, true, err
	case *sdk.ListResourcesRequest:
		if r.Params != nil && r.Params.Cursor != "" {
			return nil, false, nil
		}
		res, err := s.listResources(ctx, method, req, next)
		return res, true, err
	case *sdk.ListResourceTemplatesRequest:
		if r.Params != nil && r.Params.Cursor != "" {
			return nil, false, nil
		}
		res, err := s.listTemplates(ctx)
		return res, true, err
	case *sdk.ReadResourceRequest:
		if r.Params == nil || isSkillMD(r.Params.URI) {
			return nil, false, nil // a skill's SKILL.md: the session's own resource
		}
		if strings.HasPrefix(r.Params.URI, "skill:") {
			res, err := s.readSkillFile(ctx, r.Params.URI)
			return res, true, err
		}
		res, err := s.readMounted(ctx, r.Params)
		return res, true, err
	}
	return nil, false, nil
}

// skillNames are the names in a listing of the session's own server.
func skillNames[T any](items []T, name func(T) string) map[string]bool {
	taken := map[string]bool{}
	for _, it := range items {
		taken[name(it)] = true
	}
	return taken
}

func (s *gatewaySession) listPrompts(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	base, err := next(ctx, method, req)
	if err != nil {
		return nil, err
	}
	out := base.(*sdk.ListPromptsResult)
	servers, err := s.mountedServers(ctx)
	if err != nil {
		return nil, err
	}
	taken := skillNames(out.Prompts, func(p *sdk.Prompt) string { return p.Name })
	for _, m := range servers {
		if !m.Prompts {
			continue
		}
		prompts, err := listAll(ctx, s, m, MethodListPrompts, func(r *sdk.ListPromptsResult) ([]*sdk.Prompt, string) { return r.Prompts, r.NextCursor })
		if err != nil {
			s.g.log.Warn("mcp: gateway: listing a mounted server's prompts", "server", m.Name, "err", err)
			continue
		}
		for _, p := range prompts {
			p.Name = mountedName(m, p.Name, taken)
			out.Prompts = append(out.Prompts, p)
		}
	}
	return out, nil
}

// listAll reads every page of one listing of m (at most maxMountedPages
// pages and maxMountedItems items).
func listAll[R any, T any](ctx context.Context, s *gatewaySession, m *mountedServer, method string, items func(*R) ([]T, string)) ([]T, error) {
	var out []T
	cursor := ""
	for range maxMountedPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page R
		if err := s.ask(ctx, m, method, params, &page); err != nil {
			return out, err
		}
		got, nextCursor := items(&page)
		out = append(out, got...)
		if nextCursor == "" || len(out) >= maxMountedItems {
			return out[:min(len(out), maxMountedItems)], nil
		}
		cursor = nextCursor
	}
	return out, nil
}

// promptServer finds the server and its own name of a prompt the session
// lists as name among the mounted servers: a prefixed name, or an exposed
// server's own.
func (s *gatewaySession) promptServer(ctx context.Context, name string) (*mountedServer, string, error) {
	servers, err := s.mountedServers(ctx)
	if err != nil {
		return nil, "", err
	}
	for _, m := range servers {
		if own, ok := strings.CutPrefix(name, ToolName(m.Name, "")); ok && own != "" && m.Prompts {
			return m, s.ownPromptName(ctx, m, name, own), nil
		}
	}
	for _, m := range servers {
		if !m.exposed || !m.Prompts {
			continue
		}
		prompts, err := listAll(ctx, s, m, MethodListPrompts, func(r *sdk.ListPromptsResult) ([]*sdk.Prompt, string) { return r.Prompts, r.NextCursor })
		if err != nil {
			return nil, "", err
		}
		if slices.ContainsFunc(prompts, func(p *sdk.Prompt) bool { return p.Name == name }) {
			return m, name, nil
		}
	}
	return nil, "", nil
}

// ownPromptName is the server's own name of the prompt listed as name,
// own being that name's tail: a name the server lists with characters
// outside [A-Za-z0-9_-] is listed with them written 'x' (ToolName), so
// own is the server's name only when the server has a prompt of that
// name; else the one whose listed name is name. When the server cannot
// be listed, own.
func (s *gatewaySession) ownPromptName(ctx context.Context, m *mountedServer, name, own string) string {
	prompts, err := listAll(ctx, s, m, MethodListPrompts, func(r *sdk.ListPromptsResult) ([]*sdk.Prompt, string) { return r.Prompts, r.NextCursor })
	if err != nil || slices.ContainsFunc(prompts, func(p *sdk.Prompt) bool { return p.Name == own }) {
		return own
	}
	for _, p := range prompts {
		if ToolName(m.Name, p.Name) == name {
			return p.Name
		}
	}
	return own
}

func (s *gatewaySession) getMountedPrompt(ctx context.Context, method string, r *sdk.GetPromptRequest, next sdk.MethodHandler) (sdk.Result, error) {
	res, err := next(ctx, method, r) // a skill's prompt
	if err == nil || r.Params == nil {
		return res, err
	}
	m, own, perr := s.promptServer(ctx, r.Params.Name)
	if perr != nil || m == nil {
		return nil, err
	}
	params := *r.Params
	params.Name = own
	var out sdk.GetPromptResult
	if err := s.ask(ctx, m, MethodGetPrompt, &params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *gatewaySession) listResources(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	base, err := next(ctx, method, req)
	if err != nil {
		return nil, err
	}
	out := base.(*sdk.ListResourcesResult)
	files, err := s.skillFiles(ctx)
	if err != nil {
		return nil, err
	}
	out.Resources = append(out.Resources, files...)
	servers, err := s.mountedServers(ctx)
	if err != nil {
		return nil, err
	}
	taken := skillNames(out.Resources, func(r *sdk.Resource) string { return r.Name })
	uris := skillNames(out.Resources, func(r *sdk.Resource) string { return r.URI })
	for _, m := range servers {
		if !m.Resources {
			continue
		}
		resources, err := listAll(ctx, s, m, MethodListResources, func(r *sdk.ListResourcesResult) ([]*sdk.Resource, string) { return r.Resources, r.NextCursor })
		if err != nil {
			s.g.log.Warn("mcp: gateway: listing a mounted server's resources", "server", m.Name, "err", err)
			continue
		}
		for _, r := range resources {
			if uris[r.URI] {
				continue
			}
			uris[r.URI] = true
			r.Name = mountedName(m, r.Name, taken)
			out.Resources = append(out.Resources, r)
		}
	}
	return out, nil
}

func (s *gatewaySession) listTemplates(ctx context.Context) (sdk.Result, error) {
	servers, err := s.mountedServers(ctx)
	if err != nil {
		return nil, err
	}
	out := &sdk.ListResourceTemplatesResult{ResourceTemplates: []*sdk.ResourceTemplate{}}
	taken, seen := map[string]bool{}, map[string]bool{}
	for _, m := range servers {
		if !m.Resources {
			continue
		}
		templates, err := s.templates(ctx, m)
		if err != nil {
			s.g.log.Warn("mcp: gateway: listing a mounted server's resource templates", "server", m.Name, "err", err)
			continue
		}
		for _, t := range templates {
			if seen[t.URITemplate] {
				continue
			}
			seen[t.URITemplate] = true
			t.Name = mountedName(m, t.Name, taken)
			out.ResourceTemplates = append(out.ResourceTemplates, t)
		}
	}
	return out, nil
}

func (s *gatewaySession) templates(ctx context.Context, m *mountedServer) ([]*sdk.ResourceTemplate, error) {
	return listAll(ctx, s, m, MethodListResourceTemplates, func(r *sdk.ListResourceTemplatesResult) ([]*sdk.ResourceTemplate, string) {
		return r.ResourceTemplates, r.NextCursor
	})
}

// readMounted reads a URI from the first visible server that has it.
func (s *gatewaySession) readMounted(ctx context.Context, params *sdk.ReadResourceParams) (sdk.Result, error) {
	servers, err := s.mountedServers(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range servers {
		if !m.Resources {
			continue
		}
		var out sdk.ReadResourceResult
		err := s.ask(ctx, m, MethodReadResource, params, &out)
		if notFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &out, nil
	}
	return nil, sdk.ResourceNotFoundError(params.URI)
}

// complete answers completion/complete: a prompt's argument by the
// server of the prompt, a resource template's by the server that lists
// the template; nothing to offer is an empty list of values.
func (s *gatewaySession) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	empty := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
	if req.Params == nil || req.Params.Ref == nil {
		return empty, nil
	}
	params := *req.Params
	ref := *params.Ref
	params.Ref = &ref
	var target *mountedServer
	switch ref.Type {
	case "ref/prompt":
		m, own, err := s.promptServer(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		target, ref.Name = m, own
	case "ref/resource":
		servers, err := s.mountedServers(ctx)
		if err != nil {
			return nil, err
		}
		for _, m := range servers {
			if !m.Resources || !m.Completions || target != nil {
				continue
			}
			templates, err := s.templates(ctx, m)
			if err != nil {
				return nil, err
			}
			if slices.ContainsFunc(templates, func(t *sdk.ResourceTemplate) bool { return t.URITemplate == ref.URI }) {
				target = m
			}
		}
	}
	if target == nil || !target.Completions {
		return empty, nil
	}
	var out sdk.CompleteResult
	if err := s.ask(ctx, target, MethodComplete, &params, &out); err != nil {
		return nil, err
	}
	if out.Completion.Values == nil {
		out.Completion.Values = []string{}
	}
	return &out, nil
}

// subscribe takes a session's resources/subscribe: skills' resources
// (which send no updates) as they are, other URIs by the visible servers
// offering subscriptions that list the URI, or, when none lists it (a
// template's URI), by the first that takes the subscription. A URI the
// session holds is taken at once, asking nothing: the servers were asked
// when it was added (and the worker keeps its subscription across
// reconnects); to ask again, unsubscribe first.
func (s *gatewaySession) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	if req.Params == nil {
		return nil
	}
	added, err := s.holdSubscription(req.Params.URI)
	if err != nil || !added {
		return err
	}
	if err := s.subscribeURI(ctx, req); err != nil {
		s.dropSubscription(req.Params.URI)
		return err
	}
	return nil
}

func (s *gatewaySession) subscribeURI(ctx context.Context, req *sdk.SubscribeRequest) error {
	if strings.HasPrefix(req.Params.URI, "skill:") {
		return nil
	}
	servers, err := s.mountedServers(ctx)
	if err != nil {
		return err
	}
	servers = slices.DeleteFunc(servers, func(m *mountedServer) bool { return !m.Resources || !m.Subscribe })
	var listing []*mountedServer
	for _, m := range servers {
		resources, err := listAll(ctx, s, m, MethodListResources, func(r *sdk.ListResourcesResult) ([]*sdk.Resource, string) { return r.Resources, r.NextCursor })
		if err == nil && slices.ContainsFunc(resources, func(r *sdk.Resource) bool { return r.URI == req.Params.URI }) {
			listing = append(listing, m)
		}
	}
	if len(listing) > 0 {
		var errs []error
		for _, m := range listing {
			var out struct{}
			if err := s.ask(ctx, m, MethodSubscribe, req.Params, &out); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == len(listing) {
			return errors.Join(errs...)
		}
		return nil
	}
	err = sdk.ResourceNotFoundError(req.Params.URI)
	for _, m := range servers {
		var out struct{}
		if err = s.ask(ctx, m, MethodSubscribe, req.Params, &out); err == nil {
			return nil
		}
	}
	return err
}

// unsubscribe: the go-sdk stops notifying the session; the worker keeps
// its subscription.
func (s *gatewaySession) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	if req.Params != nil {
		s.dropSubscription(req.Params.URI)
	}
	return nil
}

// maxSessionSubscriptions and maxSessionSubscriptionBytes bound the
// resource URIs one session is subscribed to (one URI is taken whatever
// its size when the session holds none). The session's go-sdk server
// remembers every URI a subscribe was answered for until it is
// unsubscribed or the session ends, and the gateway takes skill: URIs
// (and a mounted server may take any URI) without bound: a client
// subscribing to ever new URIs would grow its session without end. Past
// the bound a subscribe to a URI not held is refused with an error
// saying so; one held is taken again, at once. (An unsubscribe racing the
// subscribe of the same URI, between this count and the go-sdk's record,
// leaves that one URI held uncounted until the session ends; so does a
// subscribe again taken while the first subscribe of its URI is still
// asking the servers, and then fails.)
const (
	maxSessionSubscriptions     = 256
	maxSessionSubscriptionBytes = 64 << 10
)

// holdSubscription counts uri among the session's subscriptions, or
// refuses it past the bound; added reports whether it was not held yet.
func (s *gatewaySession) holdSubscription(uri string) (added bool, err error) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if _, ok := s.subs[uri]; ok {
		return false, nil
	}
	if len(s.subs) > 0 && (len(s.subs) >= maxSessionSubscriptions || s.subsBytes+len(uri) > maxSessionSubscriptionBytes) {
		return false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"this session is subscribed to %d resources (%d bytes of URIs), the most it may be (%d, %d bytes): unsubscribe from one first", len(s.subs), s.subsBytes, maxSessionSubscriptions, maxSessionSubscriptionBytes)}
	}
	if s.subs == nil {
		s.subs = map[string]struct{}{}
	}
	s.subs[uri] = struct{}{}
	s.subsBytes += len(uri)
	return true, nil
}

// dropSubscription stops counting uri.
func (s *gatewaySession) dropSubscription(uri string) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if _, ok := s.subs[uri]; ok {
		delete(s.subs, uri)
		s.subsBytes -= len(uri)
	}
}

// subscriptionCount is how many resources the session is subscribed to.
func (s *gatewaySession) subscriptionCount() int {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	return len(s.subs)
}

// relayUpdates subscribes to the workers' resource updates and queues
// each on every session (the go-sdk keeps which are subscribed to the
// URI, and tells only those). Each session tells its own queue from its
// own goroutine (tellUpdates), so a client that stops reading holds up
// its own updates only, not the other sessions' nor the NATS callback.
func (g *Gateway) relayUpdates() (*nats.Subscription, error) {
	return g.nc.Subscribe(wire.SubjectMCPPrefix+"*."+wire.MCPUpdated, func(m *nats.Msg) {
		var u wire.MCPUpdate
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &u); err != nil || u.URI == "" {
			return
		}
		for _, s := range g.live() {
			if !s.updates.push(u.URI) {
				g.log.Debug("mcp: gateway: a resource update dropped: too many wait for the session", "session", s.id, "uri", u.URI)
			}
		}
	})
}

// tellUpdates tells the session the resource updates queued for it, until
// the session or the gateway ends. A write to a client that does not read
// waits here, for this session alone (ServeListener cuts such a client
// after its write timeout).
func (s *gatewaySession) tellUpdates() {
	g := s.g
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-s.ctx.Done():
			return
		case <-s.updates.wake:
		}
		for _, uri := range s.updates.take() {
			if g.ctx.Err() != nil || s.ctx.Err() != nil {
				return
			}
			if err := s.srv.ResourceUpdated(g.ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				g.log.Debug("mcp: gateway: a resource update not delivered", "session", s.id, "uri", uri, "err", err)
			}
		}
	}
}

// maxSessionUpdates and maxSessionUpdateBytes bound the resource updates
// waiting to be told to one session: the distinct URIs, and their bytes
// (one URI is taken whatever its size when none waits).
const (
	maxSessionUpdates     = 64
	maxSessionUpdateBytes = 64 << 10
)

// updateQueue holds the resource updates waiting for one session, in the
// order they came, each URI once: an update of a URI already waiting
// adds nothing (the client reads the resource as it is when it hears).
// Past its bounds, new URIs are dropped. Safe for concurrent use.
type updateQueue struct {
	mu     sync.Mutex
	uris   []string
	queued map[string]bool
	bytes  int
	wake   chan struct{} // capacity 1: something waits
}

func newUpdateQueue() *updateQueue {
	return &updateQueue{queued: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// push queues uri; false when it was dropped.
func (q *updateQueue) push(uri string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queued[uri] {
		return true
	}
	if len(q.uris) > 0 && (len(q.uris) >= maxSessionUpdates || q.bytes+len(uri) > maxSessionUpdateBytes) {
		return false
	}
	q.uris = append(q.uris, uri)
	q.queued[uri] = true
	q.bytes += len(uri)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take empties the queue, returning what waited in order.
func (q *updateQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	uris := q.uris
	q.uris, q.bytes = nil, 0
	clear(q.queued)
	return uris
}
