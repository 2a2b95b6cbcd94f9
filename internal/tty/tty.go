// Package tty tells a terminal from other files. A character device is
// not enough: /dev/null is one, and a command run with </dev/null (from
// cron, a script, CI) has nobody to prompt.
package tty

import "os"

// Is reports whether f is a terminal.
func Is(f *os.File) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	return isTerminal(f)
}
