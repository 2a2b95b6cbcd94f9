package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o instructionsOptions
	register(&command{
		name:    "instructions",
		summary: "print what goes in a session's system prompt: the instructions of its active groups (AgentScope's get_activated_notes) and its <agent-skills> prompt",
		flags:   o.register,
		run:     o.run,
	})
}

type instructionsOptions struct{ fleetFlags }

func (o *instructionsOptions) register(fs *flag.FlagSet) {
	o.add(fs, "the `session` (default: the default session)", "print JSON: {\"groups\": …, \"skills\": …}")
}

// instructionsJSON is `toolctl instructions --json`.
type instructionsJSON struct {
	Groups string `json:"groups"`
	Skills string `json:"skills"`
}

func (o *instructionsOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		return e.usagef("instructions takes no arguments, got %q", args[0])
	}
	c, fleet, code := e.fleet(ctx, o.wait)
	if fleet == nil {
		return code
	}
	active, err := c.ActiveGroups(ctx, o.session, 0)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	out := instructionsJSON{
		Groups: toolkit.ActivatedInstructions(fleet.Groups(), active),
		Skills: skill.FleetInstructions(fleet, active),
	}
	if o.json {
		return e.printJSON(out)
	}
	var parts []string
	for _, p := range []string{out.Groups, out.Skills} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		// On stderr, as groups and skills say they have none: stdout
		// stays empty for a script that pastes it into a prompt.
		session := "the default session"
		if o.session != "" {
			session = "session " + strconv.Quote(o.session)
		}
		fmt.Fprintf(e.stderr, "toolctl: nothing goes in %s's system prompt: its active groups have no instructions and it sees no skill\n", session)
		return exitOK
	}
	fmt.Fprintln(e.stdout, printableText(strings.Join(parts, "\n\n")))
	return exitOK
}
