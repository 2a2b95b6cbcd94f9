package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

func init() {
	var o sessionsOptions
	register(&command{
		name:    "sessions",
		summary: "list the sessions pinned to workers (for their session-bound tools): worker, pin age, active groups",
		flags:   o.register,
		run:     o.run,
	})
}

type sessionsOptions struct{ json bool }

func (o *sessionsOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

// sessionJSON is one session in `toolctl sessions --json`.
type sessionJSON struct {
	Identity string    `json:"identity,omitempty"`
	Session  string    `json:"session"`
	Worker   string    `json:"worker"`
	Since    time.Time `json:"since"`
	Groups   []string  `json:"active_groups"`
	// GroupsError says why the groups could not be read (active_groups
	// is then null).
	GroupsError string `json:"groups_error,omitempty"`
}

func (o *sessionsOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		return e.usagef("sessions takes no arguments")
	}
	c, err := e.bus()
	if err != nil {
		return exitCode(err)
	}
	pins, err := c.Sessions(ctx)
	if errors.Is(context.Cause(ctx), errRefused) {
		return exitUsage // the server refused the bucket to these credentials: run says why
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	if o.json {
		out := make([]sessionJSON, len(pins))
		for i, p := range pins {
			out[i] = sessionJSON{Identity: p.Identity, Session: p.Session, Worker: p.Worker, Since: p.Since, Groups: p.Groups}
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", session, or(p.Identity, "-"), plain(p.Worker),
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
