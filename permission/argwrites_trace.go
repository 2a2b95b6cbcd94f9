package permission

import (
	"slices"
	"strings"
)

// scriptLogs are script's options whose value is a log it writes.
var scriptLogs = []string{"-O", "-B", "-I", "-T", "--log-out", "--log-io", "--log-in", "--log-timing"}

// tracerWrites are the files strace, ltrace, GNU time or script (name)
// writes that its arguments name: -o FILE (--output), not a pipe to a
// command (strace -o '|cmd'), read up to the command it runs; script's
// typescript (its first operand) and logs. Their options are those the
// wrappers table gives.
func tracerWrites(name string, args []string) []string {
	var short string
	var long []string
	for _, o := range wrappers[name].valued {
		if l, ok := strings.CutPrefix(o, "--"); ok {
			long = append(long, l+"=")
		} else if len(o) == 2 {
			short += o[1:]
		}
	}
	var out []string
	each := func(opt, v string) {
		switch {
		case name == "script":
			if slices.Contains(scriptLogs, opt) {
				out = append(out, v)
			}
		case opt == "-o" || opt == "--output":
			if !strings.HasPrefix(v, "|") && !strings.HasPrefix(v, "!") {
				out = append(out, v)
			}
		}
	}
	if name == "script" {
		if ops := getopt(args, short, long, each); len(ops) > 0 {
			out = append(out, ops[0])
		}
		return out
	}
	getoptUntilOperand(args, short, long, each)
	return out
}
