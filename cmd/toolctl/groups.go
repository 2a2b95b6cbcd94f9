package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o groupsOptions
	register(&command{
		name:    "groups",
		args:    "[set GROUP…]",
		summary: "show the tool groups and which are active (for --session); `groups set --session S g1 g2` activates exactly those",
		flags:   o.register,
		run:     o.run,
	})
}

type groupsOptions struct{ fleetFlags }

func (o *groupsOptions) register(fs *flag.FlagSet) {
	o.add(fs, "the `session` whose active groups to show or set", "print JSON")
}

// groupJSON is one group in `toolctl groups --json`.
type groupJSON struct {
	Name            string `json:"name"`
	Description     string `json:"description"`
	Instructions    string `json:"instructions,omitempty"`
	ActiveByDefault bool   `json:"active_by_default"`
	// Active is the session's state; absent without --session.
	Active *bool `json:"active,omitempty"`
}

func (o *groupsOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 && args[0] == "set" {
		return o.set(ctx, e, args[1:])
	}
	if len(args) > 0 {
		return e.usagef("unexpected argument %q: toolctl groups [--session S], or toolctl groups set --session S GROUP…", args[0])
	}
	c, fleet, code := e.fleet(ctx, o.wait)
	if fleet == nil {
		return code
	}
	groups := fleet.Groups()
	var active []string
	if o.session != "" {
		var err error
		if active, err = c.ActiveGroups(ctx, o.session, 0); err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
	}
	if o.json {
		out := make([]groupJSON, len(groups))
		for i, g := range groups {
			out[i] = groupJSON{Name: g.Name, Description: g.Description, Instructions: g.Instructions, ActiveByDefault: g.Active}
			if o.session != "" {
				on := slices.Contains(active, g.Name)
				out[i].Active = &on
			}
		}
		return e.printJSON(out)
	}
	if len(groups) == 0 {
		fmt.Fprintln(e.stderr, noGroups)
		return exitOK
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if o.session != "" {
		fmt.Fprintln(tw, "NAME\tACTIVE\tDEFAULT\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "NAME\tDEFAULT\tDESCRIPTION")
	}
	for _, g := range groups {
		if o.session != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Name, yesNo(slices.Contains(active, g.Name)), yesNo(g.Active), firstLine(g.Description, 70))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Name, yesNo(g.Active), firstLine(g.Description, 70))
		}
	}
	tw.Flush()
	return exitOK
}

// noGroups says that the fleet has only the basic group; noGroupsToSet
// says it where a session's groups were to be set (reset_tools, which
// workers serve only with groups, was not found).
const (
	noGroups      = "toolctl: the fleet has no tool groups besides basic (always active)"
	noGroupsToSet = noGroups + ": a session has nothing to activate"
)

// noSuchGroups reports groups asked for on a fleet that has none besides
// basic: an error (exitError), not the success of activating nothing.
func noSuchGroups(e *env, names []string) int {
	if len(names) == 0 {
		fmt.Fprintln(e.stderr, noGroupsToSet)
		return exitOK
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	fmt.Fprintf(e.stderr, "toolctl: no group %s: the fleet has no tool groups besides basic (always active); a worker declares them in its configuration (groups:, and the exec group with execute_shell_command or execute_python_code in builtins.tools; see README: Configuration)\n", strings.Join(q, ", "))
	return exitError
}

// set activates exactly the named groups for the session with the
// reset_tools meta tool, and prints its answer (the groups' instructions).
func (o *groupsOptions) set(ctx context.Context, e *env, names []string) int {
	if o.session == "" {
		return e.usagef("groups set needs --session: group activation is per session")
	}
	input := map[string]any{}
	for _, n := range names {
		if !toolkit.ValidName(n) {
			return e.usagef("invalid group name %q", n)
		}
		input[n] = true
	}
	c, err := e.bus()
	if err != nil {
		return exitCode(err)
	}
	r := c.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Input: input, Session: o.session})
	if errors.Is(context.Cause(ctx), errRefused) {
		return exitUsage // the server dropped the call: run says why
	}
	if r.Code == toolkit.CodeNotFound { // the workers answer, and none serves reset_tools
		return noSuchGroups(e, names)
	}
	if t := r.Text(); t != "" {
		fmt.Fprintln(e.stdout, printableText(t)) // the groups' instructions, from the workers
	}
	if r.State != toolkit.StateSuccess {
		fmt.Fprintf(e.stderr, "toolctl: reset_tools ended %s (code %s)\n", plain(string(r.State)), r.Code)
	}
	return exitFor(r)
}
