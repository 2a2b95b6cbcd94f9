package builtin_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolbus/toolbus/builtin"
)

// The inode flags chattr d and A (FS_NODUMP_FL, FS_NOATIME_FL of linux/fs.h).
const (
	flagNoDump  = 0x40
	flagNoAtime = 0x80
)

// fileFlags reads path's inode flags.
func fileFlags(t *testing.T, path string) (uint32, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
}

// TestEditKeepsInodeFlags: an edit put a new file in the old one's
// place, and the new file had none of the old one's inode flags, so a
// file its owner had marked nodump (chattr +d, left out of backups) or
// noatime (+A) lost the marks at its first edit. The flags a file's
// owner may set are carried over to the new file, and those it got from
// its directory that the old one did not have are not.
func TestEditKeepsInodeFlags(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	path := filepath.Join(ws, "f.txt")
	writeFile(t, path, "1\n2\n3\n")
	plain := filepath.Join(ws, "plain.txt")
	writeFile(t, plain, "1\n")
	const want = flagNoDump | flagNoAtime
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	old, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(old|want))
	}
	f.Close()
	if err != nil {
		t.Skipf("the file system of %s keeps no nodump and noatime flags (%v): nothing to carry over", ws, err)
	}
	// The directory's flags pass to the files made in it (ext4): plain.txt,
	// made before, has none, and its edit must not give it any.
	d, err := os.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	dflags, err := unix.IoctlGetUint32(int(d.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(d.Fd()), unix.FS_IOC_SETFLAGS, int(dflags|flagNoDump))
	}
	d.Close()
	dirFlagged := err == nil
	if !dirFlagged {
		t.Logf("the directory takes no nodump flag here (%v): what a file takes from its directory is not checked", err)
	}

	wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("f.txt", map[string]any{"content": "two\n", "ranges": []any{2, 2}})))
	wantOK(t, invoke(t, tk, builtin.InsertTextFile, editInput("f.txt", map[string]any{"content": "zero", "line_number": 1})))
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("plain.txt", map[string]any{"content": "one\n"})))

	if got := readFile(t, path); got != "zero\n1\ntwo\n3\n" {
		t.Fatalf("f.txt = %q", got)
	}
	if got, err := fileFlags(t, path); err != nil || got&want != want {
		t.Errorf("f.txt's flags after its edits: %#x (%v), want nodump and noatime (%#x) kept", got, err, want)
	}
	if got, err := fileFlags(t, plain); dirFlagged && (err != nil || got&flagNoDump != 0) {
		t.Errorf("plain.txt's flags after its edit: %#x (%v), want no nodump, which it did not have", got, err)
	}
	if got := entries(t, ws); len(got) != 2 {
		t.Errorf("the workspace holds %q", got)
	}
}
