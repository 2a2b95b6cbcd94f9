package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	var o resultOptions
	register(&command{
		name:    "result",
		args:    "CALL-ID",
		summary: "print the kept result of a call sent with call --keep or --durable (for a caller that lost it); exit codes as for call",
		flags:   o.register,
		run:     o.run,
	})
}

type resultOptions struct{ json bool }

func (o *resultOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print the final as JSON")
}

func (o *resultOptions) run(ctx context.Context, e *env, args []string) int {
	if len(args) != 1 {
		return e.usagef("result takes one call id: toolctl result CALL-ID")
	}
	if !wire.ValidCallID(args[0]) {
		return e.badCallID(args[0])
	}
	c, err := e.bus()
	if err != nil {
		return exitCode(err)
	}
	final := c.Result(ctx, args[0])
	if o.json {
		if code := e.printJSON(jsonEvent(toolkit.Event{Final: final})); code != exitOK {
			return code
		}
	} else {
		out := &printer{w: e.stdout, escape: terminal(e.stdout)}
		out.final(final)
		out.end()
	}
	// A final no worker wrote (no "worker" in its metadata) is the
	// lookup's own answer, not how the call ended.
	_, kept := final.Metadata["worker"]
	switch {
	case final.State == toolkit.StateSuccess:
	case !kept && final.Code == toolkit.CodeNotFound:
		fmt.Fprintf(e.stderr, "toolctl: no result of call %s is kept (code %s): it was not sent with --keep or --durable, has not ended yet, or expired, or its worker keeps no results (a worker with --group-state memory, or without JetStream)\n", args[0], final.Code)
	case !kept && final.Code == toolkit.CodeUnavailable:
		fmt.Fprintf(e.stderr, "toolctl: the kept result of call %s could not be read (code %s)\n", args[0], final.Code)
	default:
		fmt.Fprintf(e.stderr, "toolctl: call %s ended %s (code %s)\n", args[0], plain(string(final.State)), final.Code)
	}
	return exitFor(final)
}
