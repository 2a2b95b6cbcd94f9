package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/toolbus/toolbus/skill"
)

func init() {
	var o skillsOptions
	register(&command{
		name:    "skills",
		summary: "list the fleet's skills; with --session, print the exact <agent-skills> prompt for that session's active groups",
		flags:   o.register,
		run:     o.run,
	})
}

type skillsOptions struct{ fleetFlags }

func (o *skillsOptions) register(fs *flag.FlagSet) {
	o.add(fs, "print the <agent-skills> prompt this `session` sees (basic and its active groups); when it sees no skill, stdout stays empty and stderr says so",
		"print JSON: an array of skills (name, description, group, dir)")
}

// skillJSON is one skill in `toolctl skills --json`.
type skillJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Group       string `json:"group"`
	Dir         string `json:"dir"`
}

func (o *skillsOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		return e.usagef("skills takes no arguments, got %q", args[0])
	}
	if o.session != "" && o.json {
		return e.usagef("--json lists the skills; --session prints a prompt: give one of them")
	}
	c, fleet, code := e.fleet(ctx, o.wait)
	if fleet == nil {
		return code
	}
	if o.session != "" {
		active, err := c.ActiveGroups(ctx, o.session, 0)
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		if prompt := skill.FleetInstructions(fleet, active); prompt != "" {
			fmt.Fprintln(e.stdout, printableText(prompt))
			return exitOK
		}
		// On stderr, as noSkills: the prompt is empty, and so is stdout.
		var groups []string
		for _, s := range skill.FleetSkills(fleet, nil) {
			if g := plain(s.Group); !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		if len(groups) == 0 {
			fmt.Fprintln(e.stderr, noSkills)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "toolctl: session %s sees no skill, so its prompt has none: the fleet's skills are in groups it has not activated (%s)\n", strconv.Quote(o.session), strings.Join(groups, ", "))
		return exitOK
	}
	skills := skill.FleetSkills(fleet, nil)
	if o.json {
		out := make([]skillJSON, len(skills))
		for i, s := range skills {
			out[i] = skillJSON{s.Name, s.Description, s.Group, s.Dir}
		}
		return e.printJSON(out)
	}
	if len(skills) == 0 {
		fmt.Fprintln(e.stderr, noSkills)
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGROUP\tDIR\tDESCRIPTION")
	for _, s := range skills {
		fmt.Fprint(tw, skillRow(s))
	}
	tw.Flush()
	return exitOK
}

// noSkills says that no worker of the fleet announces a skill (on stderr,
// as groups says it has none, stdout staying empty for scripts).
const noSkills = "toolctl: the fleet has no skills: a worker loads them from the skills directories of its configuration (skills:; see README: Skills)"

// skillRow is a skill's line of the table. Its name and directory come
// from a worker's skills directory, which may hold anything: they are
// Go-quoted when not printable (as plain does), the description
// cut to its first line without controls (firstLine).
func skillRow(s skill.Skill) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\n", plain(s.Name), s.Group, plain(s.Dir), firstLine(s.Description, 70))
}
