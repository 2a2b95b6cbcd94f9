package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o pendingOptions
	register(&command{
		name:    "pending",
		summary: "list the calls waiting for approval (approval_required), the longest waiting first: id, session, tool, input — to read before `approve`",
		flags:   o.register,
		run:     o.run,
	})
}

type pendingOptions struct {
	sessionFlags
	json  bool
	limit int
}

func (o *pendingOptions) register(fs *flag.FlagSet) {
	o.sessionFlags.register(fs, "only this `session`'s calls (default every session)")
	fs.BoolVar(&o.json, "json", false, "print JSON, with each call's whole recorded input")
	config.IntVar(fs, &o.limit, "limit", 50, "list at most `n` calls")
}

// pendingJSON is one call in `toolctl pending --json`.
type pendingJSON struct {
	CallID   string `json:"call_id"`
	Identity string `json:"identity,omitempty"`
	Session  string `json:"session"`
	Tool     string `json:"tool"`
	// Input is the call's input as JSON, cut at permission.MaxPendingInput
	// bytes (then not valid JSON).
	Input     string            `json:"input"`
	Reason    string            `json:"reason"`
	Message   string            `json:"message"`
	Safety    bool              `json:"safety,omitempty"`
	Suggested []permission.Rule `json:"suggested,omitempty"`
	Created   time.Time         `json:"created"`
}

// maxPendingShown is how much of an input the table shows.
const maxPendingShown = 80

func (o *pendingOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		return e.usagef("pending takes no arguments (--session S for one session's calls)")
	}
	if o.limit < 1 {
		return e.usagef("--limit must be at least 1")
	}
	if code, refused := o.checkCaller(e); refused {
		return code
	}
	g, code := e.guard(ctx)
	if g == nil {
		return code
	}
	ps, more, err := g.ListPending(ctx, o.scope(e), o.limit)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	code = exitOK
	if o.json {
		out := make([]pendingJSON, len(ps))
		for i, p := range ps {
			id, session := toolkit.SplitScope(p.Session)
			out[i] = pendingJSON{CallID: p.CallID, Identity: id, Session: session, Tool: p.Tool, Input: p.Input,
				Reason: p.Reason, Message: p.Message, Safety: p.Safety, Suggested: p.Suggested, Created: p.Created}
		}
		code = e.printJSON(out)
	} else if len(ps) > 0 {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CALL ID\tSESSION\tTOOL\tWAITING\tINPUT")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", plain(p.CallID), scopeName(p.Session), plain(p.Tool),
				time.Since(p.Created).Round(time.Second), shortInput(p.Input))
		}
		tw.Flush()
	} else {
		fmt.Fprintln(e.stderr, "toolctl: no call is waiting for approval")
	}
	if more {
		fmt.Fprintf(e.stderr, "toolctl: more calls wait than the %d shown (--limit)\n", o.limit)
	}
	return code
}

// shortInput is an input as the table shows it: on one line, without
// what would drive the terminal, cut at maxPendingShown characters.
func shortInput(s string) string {
	s = printableJSON(s)
	if utf8.RuneCountInString(s) <= maxPendingShown {
		return s
	}
	r := []rune(s)
	return string(r[:maxPendingShown-1]) + "…"
}
