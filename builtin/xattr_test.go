//go:build linux

package builtin_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolbus/toolbus/builtin"
)

// posixACL is a POSIX access ACL in the kernel's xattr form: the owner
// rw, user uid r, the owning group r, mask r, others nothing.
func posixACL(uid uint32) []byte {
	return aclXattr([]aclEntry{{0x01, 6, 0xffffffff}, {0x02, 4, uid}, {0x04, 4, 0xffffffff}, {0x10, 4, 0xffffffff}, {0x20, 0, 0xffffffff}})
}

// aclEntry is one entry of a POSIX ACL: its tag (owner, user, group,
// mask, other), permission bits and id.
type aclEntry struct {
	tag, perm uint16
	id        uint32
}

// aclXattr is a POSIX ACL of entries in the kernel's xattr form.
func aclXattr(entries []aclEntry) []byte {
	var b bytes.Buffer
	put := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	put(uint32(2)) // version
	for _, e := range entries {
		put(e.tag)
		put(e.perm)
		put(e.id)
	}
	return b.Bytes()
}

// An edit replaces the file with a new one: the file lost its extended
// attributes, its POSIX ACL among them (a user the ACL let read the file
// could not any more). They go with the content, each one the worker may
// set.
func TestEditKeepsExtendedAttributes(t *testing.T) {
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, "1\n2\n3\n")
			if err := unix.Setxattr(path, "user.origin", []byte("upstream"), 0); err != nil {
				t.Skipf("no user extended attributes here: %v", err)
			}
			acl := posixACL(4242)
			hasACL := unix.Setxattr(path, "system.posix_acl_access", acl, 0) == nil
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}

			wantOK(t, invoke(t, tk, e.tool, editInput("f.txt", e.input)))

			if got, _ := os.ReadFile(path); string(got) != e.after {
				t.Fatalf("content %q, want %q", got, e.after)
			}
			buf := make([]byte, 256)
			n, err := unix.Getxattr(path, "user.origin", buf)
			if err != nil || string(buf[:n]) != "upstream" {
				t.Errorf("user.origin after the edit: %q, %v", buf[:max(n, 0)], err)
			}
			if hasACL {
				n, err := unix.Getxattr(path, "system.posix_acl_access", buf)
				if err != nil || !bytes.Equal(buf[:n], acl) {
					t.Errorf("ACL after the edit: %x, %v; want %x", buf[:max(n, 0)], err, acl)
				}
			}
			after, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if after.Mode() != before.Mode() {
				t.Errorf("mode %v after the edit, want %v", after.Mode(), before.Mode())
			}
			if _, err := unix.Getxattr(path, "user.absent", buf); !errors.Is(err, unix.ENODATA) {
				t.Errorf("an attribute the file never had: %v", err)
			}
		})
	}
}
