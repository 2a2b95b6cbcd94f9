package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/mcp"
)

// SubjectMCPHeaders is the prefix of a worker's control subject for
// runtime MCP headers: a request on tools.control.<instance>.mcp_headers
// with a JSON mcp.RuntimeHeadersRequest ({"server": "search", "headers":
// {"Authorization": "Bearer new"}}; empty headers restore the configured
// ones) replaces the headers that worker sends to that Streamable HTTP or
// SSE server from its next request on, without a new MCP session. The
// reply is a JSON mcp.RuntimeHeadersReply ({"ok": true} or {"ok": false,
// "error": "..."}). Each worker holds its own sessions, so an operator
// rotating a token sends the request to every instance: `toolctl
// mcp-headers SERVER NAME=VALUE...` does (or --instance for one).
const SubjectMCPHeaders = "tools.control.%s.mcp_headers"

// The mcp mount serves the tools of the config's mcp_servers as
// mcp__<server>__<tool> (package mcp): a server that is down when the
// worker starts is skipped with a warning and retried in the background;
// a configuration error (an enable_tools name the server does not list)
// stops the start. --check-config validates each server's configuration.
func init() {
	addMount("mcp", mountMCP)
	addCheck(checkMCP)
}

// mcpConfigs converts the config's servers.
func mcpConfigs(cfg *config.Config) []mcp.ServerConfig {
	out := make([]mcp.ServerConfig, len(cfg.MCPServers))
	for i, s := range cfg.MCPServers {
		out[i] = mcp.ServerConfig{
			Name: s.Name, Transport: mcp.Transport(s.Transport),
			Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd,
			URL: s.URL, Headers: s.Headers,
			Mode: mcp.Mode(s.Mode), Group: s.Group,
			EnableTools: s.EnableTools, DisableTools: s.DisableTools,
			Timeout: mcp.Duration(s.Timeout),
		}
	}
	return out
}

func mountMCP(ctx context.Context, env *mountEnv) (func(), error) {
	cfgs := mcpConfigs(env.Config)
	if len(cfgs) == 0 {
		return nil, nil
	}
	servers, err := mcp.Mount(ctx, env.Toolkit, cfgs, &mcp.Options{Logger: env.Logger})
	if err != nil {
		return nil, err
	}
	subject := fmt.Sprintf(SubjectMCPHeaders, env.Instance)
	sub, err := env.Conn.Subscribe(subject, func(m *nats.Msg) { answerHeaders(servers, m) })
	if err != nil {
		servers.Close()
		return nil, fmt.Errorf("subscribing to %s: %w", subject, err)
	}
	for _, c := range servers.Clients() {
		env.Logger.Info("MCP server mounted", "server", c.Name(), "tools", len(c.Tools()))
	}
	return func() {
		sub.Unsubscribe()
		if err := servers.Close(); err != nil {
			env.Logger.Warn("closing the MCP servers", "err", err)
		}
	}, nil
}

// answerHeaders applies one runtime headers request and replies.
func answerHeaders(servers *mcp.Servers, m *nats.Msg) {
	var req mcp.RuntimeHeadersRequest
	var reply mcp.RuntimeHeadersReply
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply.Error = "invalid request: want JSON {\"server\": NAME, \"headers\": {NAME: VALUE}}: " + err.Error()
	} else {
		reply = servers.Apply(req)
	}
	if m.Reply == "" {
		return
	}
	b, _ := json.Marshal(reply)
	m.Respond(b)
}

// checkMCP validates each server's configuration as the mount will.
func checkMCP(cfg *config.Config) ([]string, error) {
	var errs []error
	for i, c := range mcpConfigs(cfg) {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("mcp_servers[%d] (%s): %w", i, c.Name, err))
		}
	}
	return nil, errors.Join(errs...)
}
