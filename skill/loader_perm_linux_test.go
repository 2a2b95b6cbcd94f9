package skill

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// A SKILL.md the worker may not read is warned of as such: the warning
// said it was "a link to outside the skill directory" (any open that
// failed while a stat worked was taken for one), sending the operator
// after a link that is not there.
func TestLoaderUnreadableIsNotALink(t *testing.T) {
	root := t.TempDir()
	p := writeSkill(t, filepath.Join(root, "locked"), skillDoc("locked", "d", "body"))
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	var warns []Warning
	var skip error
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Root reads any file: the load runs on a thread of its own
		// without the capabilities that let it (the thread is dropped
		// with the goroutine, as it stays locked). The read is made on
		// it directly: Load reads on a goroutine of its own.
		runtime.LockOSThread()
		if os.Geteuid() == 0 {
			if skip = dropDACOverride(); skip != nil {
				return
			}
		}
		_, warns = NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).readDir()
	}()
	<-done
	if skip != nil {
		t.Skip("cannot drop the capabilities that let root read any file:", skip)
	}
	if len(warns) != 1 || warns[0].Path != p || strings.Contains(warns[0].Reason, "link") || !strings.Contains(warns[0].Reason, "permission denied") {
		t.Fatalf("warnings %v, want %s unreadable: permission denied", warns, p)
	}
}

// dropDACOverride takes CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH out of
// the calling thread's effective capabilities.
func dropDACOverride() error {
	hdr := struct {
		version uint32
		pid     int32
	}{0x20080522, 0} // _LINUX_CAPABILITY_VERSION_3, this thread
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	data[0].effective &^= 1<<1 | 1<<2 // CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	return nil
}
