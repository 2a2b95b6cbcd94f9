//go:build !linux

package builtin

import "os"

// allocate is not done where the system has no fallocate: the file is
// written without room taken ahead.
func allocate(*os.File, int64) error { return errNoReserve }
