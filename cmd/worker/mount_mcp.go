package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/mcp"
)

// The mcp mount serves the tools of the config's mcp_servers as
// mcp__<server>__<tool> (package mcp): a server that is down when the
// worker starts is skipped with a warning and retried in the background;
// a configuration error (an enable_tools name the server does not list)
// stops the start. The configuration of each server is checked with the
// rest of the config (mcp.ServerConfig.Validate).
//
// The mount also answers runtime-header rotations on the worker's control
// subject (mcp.RuntimeHeadersSubject: tools.control.<instance>.mcp_headers,
// see subjects.md): the request replaces the headers the worker sends to
// one Streamable HTTP or SSE server from its next request on, without a
// new MCP session; empty headers restore the configured ones. Each worker
// holds its own sessions, so `toolctl mcp-headers` sends it to every
// instance (or --instance for one).
//
// A server with oauth (authorization_code, the default grant) is sent
// the grant `toolctl mcp login` stored in the fleet's toolbus_oauth bucket
// (mcp.OpenGrants), which the worker refreshes and writes back; without
// one, its mount fails saying so and is retried until one appears. With
// --group-state memory (no JetStream) the worker has no bucket to read:
// such servers stay unauthorized.
//
// The servers' tools share what the worker's announcement leaves
// (mcpToolBytes: its NATS server's max_payload less announceReserve),
// first come first served in configuration order: a server whose tools
// do not fit in what the servers before it left has those tools left
// out, with an error naming it and the sizes (mcp.Options.MaxToolBytes).
//
// The servers' resources, prompts and completions are announced
// (wire.MetaMCPServers) and passed on to them for the gateway on
// tools.mcp.<instance> (mcp.ServeMounted).
func init() {
	addMount("mcp", mountMCP)
	addCheck(checkMCPCommands)
}

// checkMCPCommands warns of a stdio server whose command is not there
// (not on the worker's PATH, or not an executable file): the worker
// would start without its tools and try it again in the background, so
// --check-config says so rather than "configuration OK" alone.
func checkMCPCommands(cfg *config.Config) (warnings []string, _ error) {
	for _, s := range cfg.MCPServers {
		if s.Transport != mcp.TransportStdio || s.Command == "" {
			continue
		}
		if err := findCommand(s.Command, s.Cwd); err != nil {
			warnings = append(warnings, fmt.Sprintf("mcp server %s: %v; the worker starts without its tools and tries it again in the background", s.Name, err))
		}
	}
	return warnings, nil
}

// findCommand looks for command as os/exec runs it: a name without a
// slash on the worker's PATH, a path relative to the server's cwd.
func findCommand(command, cwd string) error {
	if !strings.Contains(command, "/") {
		if _, err := exec.LookPath(command); err != nil {
			return fmt.Errorf("command %q is not on the worker's PATH", command)
		}
		return nil
	}
	path := command
	if !filepath.IsAbs(path) && cwd != "" {
		path = filepath.Join(cwd, path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("command %q: %v", command, err)
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("command %q is not an executable file", command)
	}
	return nil
}

func mountMCP(ctx context.Context, env *mountEnv) (func(), error) {
	cfgs := env.Config.MCPServers
	if len(cfgs) == 0 {
		return nil, nil
	}
	opts := &mcp.Options{Logger: env.Logger, Tracer: env.Tracer}
	if env.Conn != nil {
		opts.MaxToolBytes = mcpToolBytes(env.Conn.MaxPayload())
	}
	if needsGrants(cfgs) {
		if env.Config.State.Groups == config.GroupsMemory {
			env.Logger.Warn("MCP servers with oauth need the fleet's toolbus_oauth bucket (JetStream) for their grants; with --group-state memory they stay unauthorized")
		} else {
			if g, err := mcp.OpenGrants(ctx, env.JetStream, env.KVReplicas); err != nil {
				// Those servers stay unauthorized; the rest is served.
				env.Logger.Error("MCP servers with oauth cannot get their grants from the toolbus_oauth bucket: they stay unauthorized (does this worker's NATS user lack the bucket? toolctl auth init writes roles that have it)", "err", err)
			} else {
				opts.Grants = g
			}
		}
	}
	servers, err := mcp.Mount(ctx, env.Toolkit, cfgs, opts)
	if err != nil {
		return nil, err
	}
	sub, err := mcp.ServeRuntimeHeaders(env.Conn, env.Instance, servers, env.Logger)
	if err != nil {
		servers.Close()
		return nil, err
	}
	mounted, err := mcp.ServeMounted(env.Conn, env.Instance, servers, env.Logger)
	if err != nil {
		sub.Unsubscribe()
		servers.Close()
		return nil, err
	}
	env.Announce(wire.MetaMCPServers, servers.Announce())
	for _, c := range servers.Clients() {
		if c.Up() { // the others said why and are retried
			env.Logger.Info("MCP server mounted", "server", c.Name(), "tools", len(c.Tools()))
		}
	}
	env.mcp = servers
	return func() {
		sub.Unsubscribe()
		mounted.Unsubscribe()
		if err := servers.Close(); err != nil {
			env.Logger.Warn("closing the MCP servers", "err", err)
		}
	}, nil
}

// announceReserve is what a worker keeps of its NATS server's
// max_payload for the rest of its announcement, beside the MCP servers'
// tools: skills (up to skill.MaxAnnounced, 256 KiB) and 128 KiB for its
// own tools, its groups and its other parts.
const announceReserve = 384 << 10

// mcpToolBytes is the room the mounted MCP servers' tools share in the
// worker's announcement (mcp.Options.MaxToolBytes): 640 KiB of the
// default max_payload of 1 MiB. A max_payload of announceReserve or less
// leaves none: every server's tools are left out, each with an error.
func mcpToolBytes(maxPayload int64) int {
	if maxPayload <= announceReserve {
		return -1
	}
	return int(min(maxPayload-announceReserve, 1<<30))
}

// needsGrants: some server is authorized by a grant a person gave.
func needsGrants(cfgs []mcp.ServerConfig) bool {
	for _, c := range cfgs {
		if c.OAuth != nil && c.OAuth.Grant != mcp.GrantClientCredentials {
			return true
		}
	}
	return false
}
