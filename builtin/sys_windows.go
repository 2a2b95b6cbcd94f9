package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// On Windows the file tools work, with these differences: a file's
// owner is not carried over by an edit, killed edits' temporary files
// are not removed (no lock tells a live edit's from a dead one's), and
// edits take no lock on the file, so a workspace the workers of a fleet
// share is refused; nor is a command's every process found to kill
// (no process groups or sessions), so the shell and Python tools are
// refused, rather than left to run what they started past a cancel.

// openDir opens a directory to read or sync it.
const openDir = os.O_RDONLY

// owner is a file's owner and group: Windows gives neither as a number.
type owner struct{ Uid, Gid int }

func ownerOf(fs.FileInfo) (owner, bool) { return owner{}, false }

func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }

// errNoLocks says this system has no file locks the tools use.
var errNoLocks = errors.New("builtin: no file locks on windows")

func lockFile(int) error  { return errNoLocks }
func probeLock(int) error { return errNoLocks }

func changeTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }

// unsupported names what cfg turns on that Windows cannot do safely.
func unsupported(cfg Config) []error {
	var errs []error
	for _, t := range cfg.Tools {
		if t.Name == ExecuteShellCommand || t.Name == ExecutePythonCode {
			errs = append(errs, fmt.Errorf("builtin: tool %q is not available on windows: a cancelled or timed-out command's processes could not all be killed (no process groups or sessions)", t.Name))
		}
	}
	if cfg.SharedWorkspace {
		errs = append(errs, errors.New("builtin: SharedWorkspace is not available on windows: the file tools take no file locks there, so the edits of different workers would not be ordered"))
	}
	return errs
}

// The process functions are never called: Register refuses the tools
// that run commands.

func commandAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
func reapOrphans()                      {}
func killSession(int)                   {}
func waitExited(int) bool               { return false }
func killGroup(int)                     {}
func reap(int)                          {}
