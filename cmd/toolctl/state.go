package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

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

// maxStateBytes bounds the state state import reads.
const maxStateBytes = 1 << 20

func (o *stateOptions) run(ctx context.Context, e *env, args []string) int {
	const synopsis = "toolctl state export --session S, or toolctl state import --session S [FILE|-]"
	if len(args) == 0 {
		return e.usagef("state takes a subcommand, export or import: %s", synopsis)
	}
	if args[0] != "export" && args[0] != "import" {
		return e.usagef("unknown state command %q: export or import", args[0])
	}
	if o.session == "" {
		return e.usagef("state %s needs --session: a state is a session's groups (%s)", args[0], synopsis)
	}
	if args[0] == "export" && len(args) > 1 {
		return e.usagef("state export takes no more arguments")
	}
	if args[0] == "import" && len(args) > 2 {
		return e.usagef("state import takes one file (or - for stdin)")
	}
	// The state to import is read and checked before connecting: a bad
	// one sends nothing.
	var st toolkit.SessionState
	if args[0] == "import" {
		var r io.Reader = e.stdin
		if len(args) == 2 && args[1] != "-" {
			f, err := openInput(args[1])
			if err != nil {
				return e.usagef("%v", err)
			}
			defer f.Close()
			r = f
		}
		data, err := io.ReadAll(io.LimitReader(r, maxStateBytes+1))
		if err != nil {
			return e.usagef("reading the state: %v", err)
		}
		if len(data) > maxStateBytes {
			return e.usagef("the state is over the %d bytes a state may be", maxStateBytes)
		}
		// The key must be there, as load_state_dict requires it: a state
		// without it ({}, null) would deactivate every group of the session.
		var in struct {
			ActiveGroups *[]string `json:"active_groups"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); errors.Is(err, io.EOF) {
			return e.usagef("the state is empty; give {\"active_groups\": [...]} (what state export prints)")
		} else if err != nil {
			return e.usagef("the state is not {\"active_groups\": [...]}: %v", err)
		}
		if moreAfter(dec, data) {
			return e.usagef("the state has more than one JSON value; give one {\"active_groups\": [...]}")
		}
		if in.ActiveGroups == nil {
			return e.usagef("the state has no active_groups list; give {\"active_groups\": [...]} ([] for none)")
		}
		st.ActiveGroups = *in.ActiveGroups
	}
	c, err := e.bus()
	if err != nil {
		return exitCode(err)
	}
	switch args[0] {
	case "export":
		st, err := c.ExportState(ctx, o.session)
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		return e.printJSON(st)
	case "import":
		rev, err := c.ImportState(ctx, o.session, st)
		if toolkit.CodeOf(err) == toolkit.CodeNotFound { // the workers answer, and none serves reset_tools
			return noSuchGroups(e, st.ActiveGroups)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "session %s: active groups %v (revision %d)\n", plain(o.session), st.ActiveGroups, rev)
		return exitOK
	}
	return e.usagef("unknown state command %q: export or import", args[0])
}
