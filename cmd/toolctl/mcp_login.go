package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/mcp"
)

// toolctl mcp login SERVER: the OAuth authorization of a mounted MCP
// server, given once by a person for the whole fleet (mcp/oauth.go).
//
//	toolctl --config worker.yaml mcp login tracker
//
// The server is looked up in the config's mcp_servers (it needs oauth:).
// login listens on the server's redirect URL (oauth.redirect_url,
// mcp.DefaultRedirectURL by default), prints the authorization URL to open
// in a browser, waits for the browser to come back with the code (up to
// --login-timeout), and stores the grant in the fleet's toolbus_oauth
// bucket, where every worker mounting the server takes it (a worker that
// gave up on the server tries again within a minute). When the stored
// grant still works nothing is asked (--force asks anyway, and the stored
// grant serves until the new one replaces it). The browser
// may be on another machine when the redirect URL's port is forwarded to
// this one (ssh -L 8976:127.0.0.1:8976).
//
// toolctl mcp logout SERVER deletes the stored grant: workers keep the
// token they hold until it expires, then fail asking for a login.
//
// Either creates the toolbus_oauth bucket when no worker has yet, with
// --kv-replicas replicas (1 by default, as a worker's --kv-replicas).

func (o *mcpOptions) login(ctx context.Context, e *env, logout bool, name string) int {
	i := slices.IndexFunc(e.cfg.MCPServers, func(c mcp.ServerConfig) bool { return c.Name == name })
	if i < 0 {
		var names []string
		for _, c := range e.cfg.MCPServers {
			names = append(names, c.Name)
		}
		if len(names) == 0 {
			return e.usagef("no MCP server %q: the config has no mcp_servers (give the workers' config with --config FILE)", name)
		}
		return e.usagef("no MCP server %q in the config; it has %s", name, strings.Join(names, ", "))
	}
	cfg := e.cfg.MCPServers[i].WithDefaults()
	switch {
	case cfg.OAuth == nil:
		return e.usagef("MCP server %q has no oauth in the config: it is not authorized by OAuth", name)
	case cfg.OAuth.Grant == mcp.GrantClientCredentials:
		return e.usagef("MCP server %q uses the client_credentials grant: each worker obtains its tokens itself, there is nothing to log in to", name)
	case o.loginTimeout <= 0:
		return e.usagef("--login-timeout must be positive, got %v", o.loginTimeout)
	}
	nc, err := e.conn()
	if err != nil {
		return exitCode(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	grants, err := mcp.OpenGrants(bctx, js, o.kvReplicas)
	cancel()
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl: the fleet's grant bucket (JetStream):", needCluster(err, o.kvReplicas))
		return exitError
	}
	if logout {
		// A value that is no grant (a forged one) is deleted too.
		if g, rev, err := grants.Load(ctx, name); err == nil && g == nil && rev == 0 {
			fmt.Fprintf(e.stdout, "MCP server %q: no grant is stored; nothing to delete\n", name)
			return exitOK
		}
		if err := grants.Delete(ctx, name); err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "MCP server %q: the stored grant is deleted; workers fail asking for a login once their token expires\n", name)
		return exitOK
	}
	asked := false
	fetch, err := mcp.LoopbackAuthorizer(cfg.OAuth.Redirect(), func(url string) {
		asked = true
		fmt.Fprintf(e.stderr, "Open this URL in a browser to authorize toolbus for MCP server %q:\n\n  %s\n\nWaiting for the browser to come back to %s ...\n", name, url, cfg.OAuth.Redirect())
	})
	if err != nil {
		return e.usagef("%v", err)
	}
	if cfg.OAuth.Grant == mcp.GrantEnterprise {
		return o.enterpriseLogin(ctx, e, cfg, grants, fetch)
	}
	// --force: authorize without the stored grant (it stays in use until
	// the new one replaces it, so an abandoned login costs the fleet
	// nothing).
	var store mcp.GrantStore = grants
	if o.force {
		store = mcp.MemoryGrants()
	}
	cfg.ConnectTimeout = mcp.Duration(o.loginTimeout) // the person's time in the browser included
	c, err := mcp.NewClient(cfg, &mcp.Options{Grants: store, AuthorizationCodeFetcher: fetch,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return e.usagef("%v", err)
	}
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(e.stderr, "toolctl: MCP server %q: no authorization within %v (--login-timeout): %v\n", name, o.loginTimeout, err)
		} else {
			fmt.Fprintf(e.stderr, "toolctl: MCP server %q: %v\n", name, err)
		}
		return exitError
	}
	g, _, err := store.Load(ctx, name)
	if err == nil && g != nil && o.force {
		_, err = mcp.ReplaceGrant(ctx, grants, name, g)
	}
	if err != nil || g == nil || (!asked && o.force) {
		fmt.Fprintf(e.stderr, "toolctl: MCP server %q answered, but no new grant is stored (%v): does it want OAuth at all?\n", name, err)
		return exitError
	}
	how := "authorized"
	if !asked {
		how = "already authorized (the stored grant works; --force authorizes again)"
	}
	expiry := "no expiry"
	if !g.Expiry.IsZero() {
		expiry = "token expires " + g.Expiry.Local().Format(time.RFC3339)
	}
	refresh := "no refresh token: log in again when it expires"
	if g.RefreshToken != "" {
		refresh = "workers refresh it"
	}
	fmt.Fprintf(e.stdout, "MCP server %q %s: %d tools; the grant is in the fleet's %s bucket for every worker (%s, %s)\n",
		name, how, len(tools), wire.BucketOAuth, expiry, refresh)
	return exitOK
}

// enterpriseLogin signs the person in to the server's enterprise identity
// provider, stores the ID token for the workers, and tries it: the
// workers' exchange for an access token, as a worker does it.
func (o *mcpOptions) enterpriseLogin(ctx context.Context, e *env, cfg mcp.ServerConfig, grants mcp.GrantStore, fetch auth.AuthorizationCodeFetcher) int {
	lctx, cancel := context.WithTimeout(ctx, o.loginTimeout)
	defer cancel()
	if err := mcp.EnterpriseLogin(lctx, cfg, grants, fetch); err != nil {
		fmt.Fprintf(e.stderr, "toolctl: MCP server %q: %v\n", cfg.Name, err)
		return exitError
	}
	c, err := mcp.NewClient(cfg, &mcp.Options{Grants: grants,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return e.usagef("%v", err)
	}
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolctl: signed in to %s and stored the sign-in, but MCP server %q refuses it: %v\n", cfg.OAuth.IdPIssuer, cfg.Name, err)
		return exitError
	}
	fmt.Fprintf(e.stdout, "MCP server %q authorized: signed in to %s; %d tools; the sign-in is in the fleet's %s bucket for every worker (sign in again when it expires)\n",
		cfg.Name, cfg.OAuth.IdPIssuer, len(tools), wire.BucketOAuth)
	return exitOK
}
