package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
)

func init() {
	register(&command{
		name:    "cancel",
		args:    "CALL-ID",
		summary: "cancel a running call (it ends interrupted); for an unknown or ended id, the next call under it within 30 s ends interrupted",
		run:     runCancel,
	})
}

func runCancel(_ context.Context, e *env, args []string) int {
	if len(args) != 1 {
		return e.usagef("cancel takes one call id: toolctl cancel CALL-ID")
	}
	if !wire.ValidCallID(args[0]) {
		return e.badCallID(args[0])
	}
	c, err := e.bus()
	if err != nil {
		return exitCode(err)
	}
	if err := c.Cancel(args[0]); errors.Is(err, bus.ErrCancelNotRecorded) {
		// Sent, but a durable call taken from the queue later runs.
		fmt.Fprintln(e.stderr, "toolctl:", strings.TrimPrefix(err.Error(), "bus: "))
		return exitError
	} else if err != nil {
		return e.usagef("%v", err)
	}
	if err := e.nc.FlushTimeout(5 * time.Second); err != nil {
		fmt.Fprintln(e.stderr, "toolctl: sending the cancel:", err)
		return exitError
	}
	if e.publishRefused() {
		return exitUsage // run says why
	}
	fmt.Fprintf(e.stderr, "toolctl: cancel sent for call %s\n", args[0])
	return exitOK
}
