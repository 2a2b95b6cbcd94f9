//go:build !linux

package builtin

import (
	"errors"
	"os"
)

// inodeFlags reads none: only Linux builds read a file's inode flags.
func inodeFlags(*os.Root, string) uint32 { return 0 }

// fileFlags reads none.
func fileFlags(*os.File) (uint32, bool) { return 0, false }

// errFlags is never returned where inode flags are not copied.
var errFlags = errors.New("the file's inode flags cannot be copied")

// setKeptFlags sets none.
func setKeptFlags(*os.File, uint32) error { return nil }
