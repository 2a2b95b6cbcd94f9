//go:build !linux

package ostest

import "syscall"

// childAttr is nil where a child cannot be ended with its parent.
func childAttr() *syscall.SysProcAttr { return nil }
