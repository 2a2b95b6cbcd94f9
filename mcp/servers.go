package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// Servers is the set of MCP servers a worker mounts from its
// configuration (mcp_servers:). Safe for concurrent use.
type Servers struct {
	clients []*Client
}

// Mount validates every configuration (names must be unique), then starts
// a Client per server and registers its tools in tk (see Client.Start): a
// server that is down is skipped with a warning and retried in the
// background; a configuration error stops the mount, and the servers
// started so far are closed again. The servers' tools share
// Options.MaxToolBytes in configuration order (see "Registration" in the
// package doc).
func Mount(ctx context.Context, tk *toolkit.Toolkit, cfgs []ServerConfig, opts *Options) (*Servers, error) {
	seen := map[string]bool{}
	for i := range cfgs {
		c := cfgs[i].WithDefaults()
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if seen[cfgs[i].Name] {
			return nil, fmt.Errorf("%w %q: the name is used by another server", ErrInvalidConfig, cfgs[i].Name)
		}
		seen[cfgs[i].Name] = true
	}
	s := &Servers{}
	var budget *toolBudget // shared: one announcement holds every server's tools
	for _, cfg := range cfgs {
		c, err := NewClient(cfg, opts)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		if budget == nil {
			budget = c.budget
		}
		c.budget = budget
		s.clients = append(s.clients, c)
		if err := c.Start(ctx, tk); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Get returns the client of a server by its configured name.
func (s *Servers) Get(name string) (*Client, bool) {
	i := slices.IndexFunc(s.clients, func(c *Client) bool { return c.Name() == name })
	if i < 0 {
		return nil, false
	}
	return s.clients[i], true
}

// Clients returns every client, in configuration order.
func (s *Servers) Clients() []*Client { return slices.Clone(s.clients) }

// SetRuntimeHeaders is Client.SetRuntimeHeaders for the server named
// server; an unknown name is an error wrapping ErrRuntimeHeaders.
func (s *Servers) SetRuntimeHeaders(server string, headers map[string]string) error {
	c, ok := s.Get(server)
	if !ok {
		return fmt.Errorf("%w: no MCP server named %q", ErrRuntimeHeaders, server)
	}
	return c.SetRuntimeHeaders(headers)
}

// Close closes every client (unregistering their tools) and returns when
// all of them are closed, with each one's error (errors.Join, in
// configuration order). The clients close at once, one goroutine each: a
// stdio server that ignores stdin EOF holds its close for a few seconds
// before it is signalled, and a worker mounting several must not wait for
// them one after another.
func (s *Servers) Close() error {
	errs := make([]error, len(s.clients))
	var wg sync.WaitGroup
	for i, c := range s.clients {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Apply carries out a runtime-header request (the body of the worker's
// control subject wire.HeadersSubject): OK, or the reason it was rejected
// (nothing changed then).
func (s *Servers) Apply(req wire.HeadersRequest) wire.HeadersReply {
	if err := s.SetRuntimeHeaders(req.Server, req.Headers); err != nil {
		return wire.HeadersReply{Error: err.Error()}
	}
	return wire.HeadersReply{OK: true}
}
