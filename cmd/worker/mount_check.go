package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolbus/toolbus/config"
)

// A check is what --check-config asks of a mount beyond the config's own
// validation: errors make the configuration invalid (exit 2); warnings
// are printed and the worker would still start with them (a bad
// SKILL.md, for instance).
type check func(cfg *config.Config) (warnings []string, err error)

var checks []check

// addCheck registers a check; call it from init.
func addCheck(c check) { checks = append(checks, c) }

// checkMounts runs every check on a valid configuration, prints the
// warnings ("warning: ...", one a line) on stdout and returns the errors.
// A warning quotes names it does not control (a skill directory's), so
// what is not printable in it is escaped, as in a Go string: a newline
// cannot forge a line, nor an escape sequence drive the terminal.
func checkMounts(cfg *config.Config, stdout io.Writer) error {
	var errs []error
	for _, c := range checks {
		warnings, err := c(cfg)
		for _, w := range warnings {
			fmt.Fprintf(stdout, "warning: %s\n", printable(w))
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// printable is s with its non-printable characters and invalid bytes
// escaped (\n, \x1b, \xff), or s when it has none.
func printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
