package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/toolbus/toolbus/auth"
)

func init() {
	var a authOptions
	register(&command{
		name:    "auth",
		args:    "init [--dir DIR] [--caller ID]...",
		summary: "write the fleet's roles as a nats-server configuration with one nkey per operator, worker and caller",
		local:   true,
		flags:   a.register,
		run:     a.run,
	})
}

type authOptions struct {
	dir     string
	callers callerList
}

// callerList is a repeatable, comma-separable --caller flag.
type callerList []string

func (l *callerList) String() string { return strings.Join(*l, ",") }

func (l *callerList) Set(v string) error {
	n := len(*l)
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*l = append(*l, id)
		}
	}
	if len(*l) == n {
		// --caller "$AGENT" with AGENT unset would add nobody, silently.
		return errors.New("want a caller identity, such as agent-1")
	}
	return nil
}

func (o *authOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.dir, "dir", "toolbus-auth", "`directory` to write server.conf and the *.nk seeds into (kept private: mode 0700)")
	fs.Var(&o.callers, "caller", "caller `identity` to add (repeatable, or comma-separated): one per agent or client")
}

func (o *authOptions) run(_ context.Context, e *env, args []string) int {
	if len(args) != 1 || args[0] != "init" {
		return e.usagef("auth takes one subcommand: toolctl auth init [--dir DIR] [--caller ID]...")
	}
	setup, err := auth.Init(o.dir, o.callers)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "wrote %s and %s\n", setup.ServerConfig, setup.GatewayTokens)
	for _, u := range setup.Users {
		name := u.Role
		if u.Identity != "" {
			name += " " + u.Identity
		}
		fmt.Fprintf(e.stdout, "  %-20s %s  %s\n", name, u.Public, u.SeedFile)
	}
	dir := o.dir
	fmt.Fprintf(e.stdout, "\nrun the fleet with it:\n"+
		"  worker (embedded server):  go run ./cmd/worker --server-config %s --nkey %s\n"+
		"  or a nats-server:          nats-server -js -c %s, and workers with --nats URL --nkey %s\n"+
		"  operator:                  go run ./cmd/toolctl --nkey %s approve CALL-ID\n"+
		"  MCP gateway:               go run ./cmd/toolctl --nkey %s mcp serve --listen 0.0.0.0:8808 --tokens %s\n",
		setup.ServerConfig, filepath.Join(dir, auth.SeedFile(auth.RoleWorker, "")),
		setup.ServerConfig, filepath.Join(dir, auth.SeedFile(auth.RoleWorker, "")),
		filepath.Join(dir, auth.SeedFile(auth.RoleOperator, "")),
		filepath.Join(dir, auth.SeedFile(auth.RoleGateway, "")), setup.GatewayTokens)
	for _, u := range setup.Users {
		if u.Role == auth.RoleCaller {
			fmt.Fprintf(e.stdout, "  caller %-19s go run ./cmd/toolctl --nkey %s --identity %s call echo '{\"text\":\"hi\"}'\n", u.Identity+":", u.SeedFile, u.Identity)
		}
	}
	return exitOK
}
