package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o stateOptions
	register(&command{
		name:    "state",
		args:    "export | import [FILE|-]",
		summary: "export a session's state as JSON ({\"active_groups\": [...]}, AgentScope's state_dict), or import one (load_state_dict)",
		flags:   o.register,
		run:     o.run,
	})
}

type stateOptions struct{ session string }

func (o *stateOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.session, "session", "", "the `session` (required)")
}

func (o *stateOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || o.session == "" {
		return e.usagef("toolctl state export --session S, or toolctl state import --session S [FILE|-]")
	}
	c, err := e.bus()
	if err != nil {
		return exitCode(err)
	}
	switch args[0] {
	case "export":
		if len(args) > 1 {
			return e.usagef("state export takes no more arguments")
		}
		st, err := c.ExportState(ctx, o.session)
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		return e.printJSON(st)
	case "import":
		if len(args) > 2 {
			return e.usagef("state import takes one file (or - for stdin)")
		}
		var r io.Reader = e.stdin
		if len(args) == 2 && args[1] != "-" {
			f, err := os.Open(args[1])
			if err != nil {
				return e.usagef("%v", err)
			}
			defer f.Close()
			r = f
		}
		var st toolkit.SessionState
		dec := json.NewDecoder(io.LimitReader(r, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return e.usagef("the state is not {\"active_groups\": [...]}: %v", err)
		}
		rev, err := c.ImportState(ctx, o.session, st)
		if toolkit.CodeOf(err) == toolkit.CodeNotFound { // the workers answer, and none serves reset_tools
			fmt.Fprintln(e.stderr, noGroupsToSet)
			return exitOK
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "session %s: active groups %v (revision %d)\n", o.session, st.ActiveGroups, rev)
		return exitOK
	}
	return e.usagef("unknown state command %q: export or import", args[0])
}
