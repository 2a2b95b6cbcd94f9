//go:build !linux

package builtin

// reapOrphans does nothing where the worker cannot tell a command's
// orphans from its other children (no /proc).
func reapOrphans() {}
