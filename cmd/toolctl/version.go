package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/toolbus/toolbus/internal/buildinfo"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print toolctl's version (also toolctl --version)",
		local:   true,
		run: func(_ context.Context, e *env, args []string) int {
			if len(args) > 0 {
				return e.usagef("version takes no arguments")
			}
			fmt.Fprintln(e.stdout, "toolctl", cmp.Or(buildinfo.Version(), "(devel)"))
			return exitOK
		},
	})
}
