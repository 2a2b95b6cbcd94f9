package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/discovery"
)

func init() {
	var o sessionsOptions
	register(&command{
		name:    "sessions",
		summary: "list the sessions pinned to workers (for their session-bound tools): worker, marked (gone) when no live worker answers for it (the session's next call moves it), pin age, active groups",
		flags:   o.register,
		run:     o.run,
	})
}

type sessionsOptions struct {
	json bool
	wait time.Duration
}

func (o *sessionsOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
	config.DurationVar(fs, &o.wait, "wait", discovery.DefaultDiscoverWindow, "how long to collect the live workers' answers, to mark the pins of workers gone (a `duration`)")
}

// sessionJSON is one session in `toolctl sessions --json`.
type sessionJSON struct {
	Identity string `json:"identity,omitempty"`
	Session  string `json:"session"`
	Worker   string `json:"worker"`
	// WorkerGone: no live worker of the fleet is Worker; the session's
	// next call of a session-bound tool moves it.
	WorkerGone bool      `json:"worker_gone,omitempty"`
	Since      time.Time `json:"since"`
	Groups     []string  `json:"active_groups"`
	// GroupsError says why the groups could not be read (active_groups
	// is then null).
	GroupsError string `json:"groups_error,omitempty"`
}

func (o *sessionsOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		return e.usagef("sessions takes no arguments")
	}
	if o.wait <= 0 {
		return e.usagef("--wait must be positive, got %v", o.wait)
	}
	nc, err := e.conn()
	if err != nil {
		return exitCode(err)
	}
	c, err := e.newClient(nc, bus.ClientOptions{Logger: slog.New(slog.NewTextHandler(e.stderr, nil)), DiscoverWindow: o.wait})
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	e.mu.Lock()
	e.client = c // closed by a refusal, and by close
	e.mu.Unlock()
	pins, err := c.Sessions(ctx)
	if errors.Is(context.Cause(ctx), errRefused) {
		return exitUsage // the server refused the bucket to these credentials: run says why
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	// A pin outlives its worker until the session's next call moves it:
	// the pins of workers not in the fleet (none answered the discovery
	// within --wait, nor announced since) are marked gone.
	gone := map[string]bool{}
	if len(pins) > 0 {
		fleet, err := c.Fleet(ctx)
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		live := map[string]bool{}
		for _, in := range fleet.Instances() {
			live[in.ID] = true
		}
		for _, p := range pins {
			gone[p.Worker] = !live[p.Worker]
		}
	}
	if o.json {
		out := make([]sessionJSON, len(pins))
		for i, p := range pins {
			out[i] = sessionJSON{Identity: p.Identity, Session: p.Session, Worker: p.Worker, WorkerGone: gone[p.Worker], Since: p.Since, Groups: p.Groups}
			if p.GroupsErr != nil {
				out[i].GroupsError = p.GroupsErr.Error()
			}
		}
		return e.printJSON(out)
	}
	if len(pins) == 0 {
		fmt.Fprintln(e.stderr, "toolctl: no session is pinned (none has called a session-bound tool, or the workspace is shared)")
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tIDENTITY\tWORKER\tPINNED FOR\tACTIVE GROUPS")
	var bad []error // sessions whose groups could not be read: said after the table
	for _, p := range pins {
		session := plain(p.Session) // the caller's: it must not drive the terminal
		if session == "" {
			session = "(default)"
		}
		groups := or(strings.Join(p.Groups, ","), "-")
		if p.GroupsErr != nil {
			groups = "?"
			bad = append(bad, p.GroupsErr)
		}
		// The worker is the value a worker wrote in the sessions bucket.
		worker := plain(p.Worker)
		if gone[p.Worker] {
			worker += " (gone)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", session, or(p.Identity, "-"), worker,
			time.Since(p.Since).Round(time.Second), groups)
	}
	tw.Flush()
	for _, err := range bad {
		fmt.Fprintln(e.stderr, "toolctl:", err)
	}
	return exitOK
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
