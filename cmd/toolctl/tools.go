package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/urlredact"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o toolsOptions
	register(&command{
		name:    "tools",
		summary: "list the tools the fleet serves (every live worker's, merged), as a table or JSON",
		flags:   o.register,
		run:     o.run,
	})
}

// fleetFlags are the flags of the commands that read the fleet's
// announcements: tools, groups and skills.
type fleetFlags struct {
	session string
	json    bool
	wait    time.Duration
}

func (f *fleetFlags) add(fs *flag.FlagSet, sessionUsage, jsonUsage string) {
	fs.StringVar(&f.session, "session", "", sessionUsage)
	fs.BoolVar(&f.json, "json", false, jsonUsage)
	config.DurationVar(fs, &f.wait, "wait", discovery.DefaultDiscoverWindow, "how long to collect the workers' answers (a `duration`)")
}

type toolsOptions struct{ fleetFlags }

func (o *toolsOptions) register(fs *flag.FlagSet) {
	o.add(fs, "list only what this `session` can call now (basic and its active groups)", "print JSON: an array of tools with their parameters")
}

// toolJSON is one tool in `toolctl tools --json`.
type toolJSON struct {
	Name            string          `json:"name"`
	Group           string          `json:"group"`
	ReadOnly        bool            `json:"read_only"`
	ConcurrencySafe bool            `json:"concurrency_safe"`
	Idempotency     string          `json:"idempotency"`
	Description     string          `json:"description"`
	Instances       []string        `json:"instances"`
	Parameters      json.RawMessage `json:"parameters"` // in declaration order
}

func (o *toolsOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		return e.usagef("tools takes no arguments, got %q", args[0])
	}
	c, fleet, code := e.fleet(ctx, o.wait)
	if fleet == nil {
		return code
	}
	tools := fleet.Tools()
	if o.session != "" {
		schemas, err := c.SessionSchemas(ctx, o.session, 0)
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		visible := map[string]bool{}
		for _, s := range schemas {
			visible[s.Function.Name] = true
		}
		tools = slices.DeleteFunc(tools, func(t discovery.Tool) bool { return !visible[t.Name] })
	}
	if o.json {
		out := make([]toolJSON, len(tools))
		for i, t := range tools {
			params, err := toolkit.MarshalSchema(t.Parameters, t.Order)
			if err != nil {
				fmt.Fprintln(e.stderr, "toolctl:", err)
				return exitError
			}
			out[i] = toolJSON{t.Name, t.Group, t.ReadOnly, t.ConcurrencySafe, t.Idempotency, t.Description, t.Instances, params}
		}
		return e.printJSON(out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGROUP\tREAD-ONLY\tWORKERS\tDESCRIPTION")
	for _, t := range tools {
		ro := "no"
		if t.ReadOnly {
			ro = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", t.Name, t.Group, ro, len(t.Instances), firstLine(t.Description, 70))
	}
	tw.Flush()
	return exitOK
}

// noWorkerHint follows the word that no worker answered on a server
// that took the connection: a NATS server of its own, or a busy fleet.
const noWorkerHint = " (start a worker joined to that server, worker --nats URL; on a busy fleet, give a longer --wait)"

// fleet returns the client the fleet commands list through (collecting
// the workers' announcements for wait, leaving out of a session's listing
// what it can never run) and its view of the fleet; with no worker it
// prints why and returns a nil Fleet and the exit code.
func (e *env) fleet(ctx context.Context, wait time.Duration) (*bus.Client, *discovery.Fleet, int) {
	if wait <= 0 {
		return nil, nil, e.usagef("--wait must be positive, got %v", wait)
	}
	nc, err := e.conn()
	if err != nil {
		return nil, nil, exitCode(err)
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := e.newClient(nc, bus.ClientOptions{Logger: log, DiscoverWindow: wait, Filter: e.permissionFilter(log)})
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return nil, nil, exitError
	}
	e.closers = append(e.closers, c.Close)
	fleet, err := c.Fleet(ctx)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return nil, nil, exitError
	}
	if len(fleet.Instances()) == 0 {
		fmt.Fprintf(e.stderr, "toolctl: no worker answered on %s within %v%s\n", urlredact.List(e.url()), wait, noWorkerHint)
		return nil, nil, exitError
	}
	return c, fleet, exitOK
}

// permissionFilter leaves out of a session's listing the tools it can
// never run (permission.ListFilter), reading the fleet's permission store
// only when a worker checks permissions.
func (e *env) permissionFilter(log *slog.Logger) bus.ListFilter {
	return permission.ListFilter(func(ctx context.Context) (permission.Store, error) {
		// The modes and rules only: a caller may read its own sessions'
		// and may not see the approvals bucket.
		st, code := e.store(ctx, &permission.KVConfig{BindOnly: true, PoliciesOnly: true, Identity: e.cfg.NATS.Identity})
		if st == nil {
			return nil, exitStatus{code}
		}
		return st, nil
	}, log)
}

// firstLine returns the first line of s, its unprintable characters as
// spaces (unprintableAsSpaces), cut to n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	s = unprintableAsSpaces(s)
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// unprintableAsSpaces is s for a cell of a table with every character
// that is not printable as a space. Descriptions and error texts come
// from tool authors and mounted MCP servers: no terminal escapes (C0 and
// C1 controls), tabs (the table's), line breaks, bidi overrides or other
// format characters (unicode.IsControl misses the latter).
func unprintableAsSpaces(s string) string {
	return strings.Map(func(c rune) rune {
		if !unicode.IsPrint(c) {
			return ' '
		}
		return c
	}, s)
}
