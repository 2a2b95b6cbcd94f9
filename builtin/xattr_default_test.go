//go:build linux

package builtin_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolbus/toolbus/builtin"
)

// defaultACL is a POSIX default ACL in the kernel's xattr form, which a
// file made in the directory inherits: the owner rwx, user uid rwx, the
// owning group rx, mask rwx, others nothing.
func defaultACL(uid uint32) []byte {
	return aclXattr([]aclEntry{{0x01, 7, 0xffffffff}, {0x02, 7, uid}, {0x04, 5, 0xffffffff}, {0x10, 7, 0xffffffff}, {0x20, 0, 0xffffffff}})
}

// TestEditAddsNoInheritedACL: an edit puts a new file in the old one's
// place, and a file made in a directory with a default ACL inherits it.
// A file of that directory without an ACL of its own (made before the
// directory had one, or stripped of it to keep it private) came out of
// an edit with the directory's: a user the ACL names could then read
// it (as far as the group bits, its mask, allow), or write it once the
// group may. The new file has the old
// one's attributes and no others: an inherited ACL is removed; one of
// the file's own is kept.
func TestEditAddsNoInheritedACL(t *testing.T) {
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			dir := filepath.Join(ws, "team")
			if err := os.Mkdir(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			private := filepath.Join(dir, "private.txt")
			writeFile(t, private, "1\n2\n3\n")
			if err := os.Chmod(private, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := unix.Setxattr(dir, "system.posix_acl_default", defaultACL(4242), 0); err != nil {
				t.Skipf("no POSIX ACLs here: %v", err)
			}
			// A file with an ACL of its own keeps it, not the directory's.
			own := filepath.Join(dir, "own.txt")
			writeFile(t, own, "1\n2\n3\n")
			acl := posixACL(4343)
			if err := unix.Setxattr(own, "system.posix_acl_access", acl, 0); err != nil {
				t.Fatal(err)
			}

			for _, p := range []string{"team/private.txt", "team/own.txt"} {
				wantOK(t, invoke(t, tk, e.tool, editInput(p, e.input)))
			}

			buf := make([]byte, 256)
			if n, err := unix.Getxattr(private, "system.posix_acl_access", buf); !errors.Is(err, unix.ENODATA) {
				t.Errorf("private.txt has an ACL after the edit (%x, %v), it had none", buf[:max(n, 0)], err)
			}
			if fi, err := os.Stat(private); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("private.txt: %v, %v; want mode 0640", fi.Mode(), err)
			}
			if n, err := unix.Getxattr(own, "system.posix_acl_access", buf); err != nil || !bytes.Equal(buf[:n], acl) {
				t.Errorf("own.txt's ACL after the edit: %x, %v; want %x", buf[:max(n, 0)], err, acl)
			}
			if got := readFile(t, private); got != e.after {
				t.Errorf("private.txt = %q, want %q", got, e.after)
			}
		})
	}
}
