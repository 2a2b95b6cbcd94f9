package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
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
	if o.dir == "" {
		// --dir "$DIR" with DIR unset: mkdir "" says nothing of the flag.
		return e.usagef("--dir needs a directory: where auth init writes server.conf and the keys (default toolbus-auth)")
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
	exe, _ := os.Executable()
	toolctl, worker := fleetCommands(exe)
	fmt.Fprintf(e.stdout, "\nrun the fleet with it:\n"+
		"  worker (embedded server):  %[1]s --server-config %[3]s --nkey %[4]s\n"+
		"  or a nats-server:          nats-server -js -c %[5]s, and workers with --nats URL --nkey %[6]s\n"+
		"  operator:                  %[2]s --nkey %[7]s approve CALL-ID\n"+
		"  MCP gateway:               %[2]s --nkey %[8]s mcp serve --listen 0.0.0.0:8808 --tokens %[9]s\n",
		worker, toolctl,
		setup.ServerConfig, filepath.Join(dir, auth.SeedFile(auth.RoleWorker, "")),
		setup.ServerConfig, filepath.Join(dir, auth.SeedFile(auth.RoleWorker, "")),
		filepath.Join(dir, auth.SeedFile(auth.RoleOperator, "")),
		filepath.Join(dir, auth.SeedFile(auth.RoleGateway, "")), setup.GatewayTokens)
	for _, u := range setup.Users {
		if u.Role == auth.RoleCaller {
			fmt.Fprintf(e.stdout, "  caller %-19s %s --nkey %s --identity %s call echo '{\"text\":\"hi\"}'\n", u.Identity+":", toolctl, u.SeedFile, u.Identity)
		}
	}
	return exitOK
}

// fleetCommands is how the commands auth init prints run toolctl and the
// worker, as the worker's try line runs toolctl: go run for a toolctl
// started by go run (exe in the build cache's temporary directory), else
// exe and the worker beside it, else the worker from the PATH.
func fleetCommands(exe string) (toolctl, worker string) {
	if exe == "" || strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/toolctl", "go run ./cmd/worker"
	}
	worker = "worker"
	beside := filepath.Join(filepath.Dir(exe), "worker")
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
		worker = shellQuote(beside)
	}
	return shellQuote(exe), worker
}
