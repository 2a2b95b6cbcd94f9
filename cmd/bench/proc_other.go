//go:build !linux

package main

import (
	"os"
	"syscall"
)

// terminate asks a worker process to exit.
var terminate = os.Interrupt

func childAttr() *syscall.SysProcAttr { return nil }
