//go:build !linux

package builtin

import "os"

// inodeFlags reads none: only Linux builds read a file's inode flags.
func inodeFlags(*os.Root, string) uint32 { return 0 }
