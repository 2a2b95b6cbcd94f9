package main

import (
	"errors"
	"fmt"
	"io"

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
func checkMounts(cfg *config.Config, stdout io.Writer) error {
	var errs []error
	for _, c := range checks {
		warnings, err := c(cfg)
		for _, w := range warnings {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
