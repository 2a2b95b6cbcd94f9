package main

import (
	"cmp"
	"context"
	"fmt"
	"runtime/debug"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print toolctl's version",
		run: func(_ context.Context, e *env, args []string) int {
			if len(args) > 0 {
				return e.usagef("version takes no arguments")
			}
			v := ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				v = bi.Main.Version
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						v += "+" + s.Value[:12]
					}
				}
			}
			fmt.Fprintln(e.stdout, "toolctl", cmp.Or(v, "(devel)"))
			return exitOK
		},
	})
}
