package builtin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/toolbus/toolbus/internal/regularfile"
)

// The file tools change a file by writing the new content to a temporary
// file beside it, syncing it, and putting it in the file's place in one
// step (a rename, or a hard link for a new file). A reader, or a
// worker killed half-way, sees the old file or the new one, never a
// truncated or half-written one, and a failed write leaves the file as it
// was. rel is a path resolve returned, free of symlinks, so a path that
// was a link to a file of the workspace has the link's target replaced,
// and the link stays. Where the directory refuses that (the worker may
// write the file but not the directory, or not rename over another
// user's file in a sticky directory) or the file system has no modes, an
// existing file is rewritten in place instead, as before (inPlace). So
// is one in an append-only directory, where a temporary file could not
// be removed; a new file there is written where it is made (writeNew).

// create writes a new file rel. As an exclusive create, it fails if rel
// exists by the time the file is put in place.
func create(root *os.Root, rel, content string) error {
	dir, name, err := parentOf(root, rel)
	if err != nil {
		return err
	}
	defer dir.Close()
	if appendOnlyDir(dir, name) {
		return explain(dir, name, true, writeNew(dir, name, content))
	}
	tmp, hold, err := writeTemp(dir, name, content, nil)
	if err != nil {
		return explain(dir, name, true, err)
	}
	defer hold.Close()
	defer dir.Remove(tmp)
	if beforePlace != nil {
		beforePlace()
	}
	if err := dir.Link(tmp, name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// A file system without hard links: rename, which would
		// replace a file that appeared since rel was looked at.
		if err := dir.Rename(tmp, name); err != nil {
			return err
		}
	}
	syncDir(dir, name)
	return nil
}

// parentOf opens rel's directory and returns it with rel's name in it.
// An edit makes its temporary file, puts it in place or removes it, in
// that one directory: where it went by name, a rename of the directory
// meanwhile failed the edit with the file "not existing" and left the
// temporary file, holding the content, in the directory's new place.
func parentOf(root *os.Root, rel string) (dir *os.Root, name string, err error) {
	dir, err = root.OpenRoot(dirOnly(filepath.Dir(rel)))
	if err != nil {
		return nil, "", err
	}
	return dir, filepath.Base(rel), nil
}

// beforePlace, when set, runs between the writing of an edit's
// temporary file and its putting in place (a hook for tests).
var beforePlace func()

// replace puts content in place of the existing regular file rel, keeping
// its mode, its extended attributes, the inode flags its owner may set
// and, where allowed, its owner. It
// first opens rel for writing, without blocking, and checks what it
// opened, so that what could not be written in place is refused as
// before (a file without write permission, a named pipe swapped in since
// the file was looked at) and the new file takes the mode of the file it
// replaces.
func replace(root *os.Root, rel, content string) (err error) {
	dir, name, err := parentOf(root, rel)
	if err != nil {
		return explain(root, rel, false, err)
	}
	defer dir.Close()
	defer func() { err = explain(dir, name, false, err) }()
	file, fi, err := openRegular(dir, name)
	var attrs []xattr
	var flags uint32
	if err == nil {
		attrs, err = readXattrs(file)
		flags, _ = fileFlags(file)
	}
	if file != nil {
		err = errors.Join(err, file.Close())
	}
	if errors.Is(err, errXattrs) {
		return inPlace(dir, name, content)
	}
	if err != nil {
		return err
	}
	if appendOnlyDir(dir, name) {
		return inPlace(dir, name, content)
	}
	tmp, hold, err := writeTemp(dir, name, content, &original{fi, attrs, flags})
	if refused(err) {
		return inPlace(dir, name, content)
	}
	if err != nil {
		return err
	}
	defer hold.Close()
	if beforePlace != nil {
		beforePlace()
	}
	if err := dir.Rename(tmp, name); err != nil {
		dir.Remove(tmp)
		if refused(err) {
			return inPlace(dir, name, content)
		}
		return err
	}
	syncDir(dir, name)
	return nil
}

// openRegular opens the existing file rel for writing, without blocking
// (a named pipe swapped in since it was looked at is not waited on), and
// checks that it is a regular file. The file is nil when it could not be
// opened; else the caller closes it, also with an error.
func openRegular(root *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	file, err := root.OpenFile(rel, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := file.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is %s", rel, regularfile.Kind(fi.Mode()))
	}
	return file, fi, err
}

// refused reports whether the directory or the file system refused what
// the atomic replacement needs while the file itself may be writable: a
// directory the worker may not write (a temporary file), a sticky one
// (renaming over another user's file), a file system without modes, a
// file whose extended attributes or inode flags the new one cannot take.
func refused(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, errXattrs) || errors.Is(err, errFlags)
}

// inPlace rewrites the existing regular file rel in place, as the file
// tools did before they replaced files: where the directory refuses a
// replacement, a file the worker may write is still edited (not
// atomically). It opens without blocking and checks what it opened.
//
// The room for the new content is taken first (reserve): a file system
// without it (full, over a quota, over the process's file size limit)
// fails the edit before the file is touched. Only then is the content
// written over the old and the file cut to its length, so a failure
// past that point (partialError) is one of the device.
func inPlace(root *os.Root, rel, content string) error {
	file, fi, err := openRegular(root, rel)
	if file == nil {
		return err
	}
	if err == nil {
		err = reserve(file, fi.Size(), int64(len(content)))
	}
	if err != nil {
		return errors.Join(err, file.Close())
	}
	_, err = io.WriteString(file, content) // at the start: the file was just opened
	if err == nil {
		err = file.Truncate(int64(len(content)))
	}
	if err == nil {
		err = file.Sync()
	}
	if err = errors.Join(err, file.Close()); err != nil {
		return partialError{err}
	}
	return nil
}

// appendOnlyDir reports whether rel's directory is append-only (on
// Linux, chattr +a): a file may be made there, but not removed or
// renamed over, so a temporary file could neither replace rel nor be
// cleaned up. Edits there are made in place.
func appendOnlyDir(root *os.Root, rel string) bool {
	return inodeFlags(root, filepath.Dir(rel))&flagAppendOnly != 0
}

// writeNew makes the file rel and writes content into it, for a
// directory where a temporary file could not be cleaned up
// (appendOnlyDir): a reader may see the file before it holds all of
// it. The room for the content is taken first, and a failure after
// the file was made leaves it there (it cannot be removed), maybe
// holding part of the content (partialError).
func writeNew(root *os.Root, rel, content string) error {
	file, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = reserve(file, 0, int64(len(content)))
	if err == nil {
		_, err = io.WriteString(file, content)
	}
	if err == nil {
		err = file.Sync()
	}
	if err = errors.Join(err, file.Close()); err != nil {
		return partialError{err}
	}
	syncDir(root, rel)
	return nil
}

// errNoReserve says the file system cannot allocate a file's blocks
// ahead of writing them.
var errNoReserve = errors.New("cannot allocate ahead")

// reserve takes the room for n bytes of content in file, now size bytes
// long, without changing what it holds. Where that cannot be done ahead
// (the file system has no fallocate), the file is written without.
func reserve(file *os.File, size, n int64) error {
	if n == 0 {
		return nil
	}
	err := allocate(file, n)
	if err == nil || errors.Is(err, errNoReserve) {
		return nil
	}
	// A failed allocation may have grown the file by what it did get.
	if terr := file.Truncate(size); terr != nil {
		return partialError{errors.Join(err, terr)}
	}
	return fmt.Errorf("no room for the new content's %d bytes: %w", n, err)
}

// partialError is the failure of an edit made in place after it began
// to write: the file may hold part of the new content. Every other
// failure of create, replace and inPlace leaves the file as it was.
type partialError struct{ err error }

func (e partialError) Error() string { return e.err.Error() }
func (e partialError) Unwrap() error { return e.err }

// original is what an edit keeps of the file it replaces: its mode and
// owner (fi), its extended attributes and its inode flags.
type original struct {
	fi    fs.FileInfo
	attrs []xattr
	flags uint32
}

// writeTemp writes content to a new temporary file in rel's directory and
// syncs it. With like, the file gets like's mode and owner (the owner
// only where the worker may give it), extended attributes and the inode
// flags its owner may set, and no others (not one inherited from the
// directory); without, the mode a created file gets (0644 less the
// umask). On failure nothing is left behind. The caller closes hold, a
// lock on the file (tempfiles.go), once it put the file in place or
// removed it; hold may be nil, whose Close does nothing.
func writeTemp(root *os.Root, rel, content string, like *original) (tmp string, hold *os.File, err error) {
	tmp = tempName(filepath.Dir(rel))
	perm := fs.FileMode(0o644)
	if like != nil {
		perm = 0o600 // until it has like's mode, which the umask must not narrow
	}
	file, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", nil, err
	}
	hold = holdTemp(root, tmp)
	if like != nil {
		err = setKeptFlags(file, like.flags) // while empty, and the worker's
	}
	if err == nil {
		_, err = io.WriteString(file, content)
	}
	var drop fs.FileMode
	if err == nil && like != nil {
		drop = keepOwner(file, like.fi)
		err = setXattrs(file, like.attrs) // before the mode, which sets an ACL's mask
	}
	if err == nil && like != nil {
		err = file.Chmod(like.fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky) &^ drop)
	}
	if err == nil {
		err = file.Sync()
	}
	if err := errors.Join(err, file.Close()); err != nil {
		root.Remove(tmp)
		hold.Close()
		return "", nil, err
	}
	return tmp, hold, nil
}

// keepOwner gives file like's owner and group when they differ from its
// own. Only root may give a file away, and a user only to a group of
// theirs: where the worker may not give the owner, it still gives the
// group when it may (a shared workspace keeps its group's access), and
// otherwise the new file stays the worker's, as any file it creates is.
// Before the mode is set, since a change of owner clears the set-user-ID
// and set-group-ID bits.
//
// It returns the bits the new file must not take from like: set-user-ID
// and set-group-ID where the owner is not like's (whoever ran another
// user's program would run it as the worker; the kernel drops both when
// a user writes another's file in place), set-group-ID where the group
// is not like's; both when it cannot tell.
func keepOwner(file *os.File, like fs.FileInfo) (drop fs.FileMode) {
	const both = fs.ModeSetuid | fs.ModeSetgid
	want, ok := ownerOf(like)
	if !ok {
		return both
	}
	fi, err := file.Stat()
	if err != nil {
		return both
	}
	have, ok := ownerOf(fi)
	if !ok {
		return both
	}
	if have.Uid != want.Uid || have.Gid != want.Gid {
		if file.Chown(want.Uid, want.Gid) != nil && have.Gid != want.Gid {
			_ = file.Chown(-1, want.Gid)
		}
		if fi, err = file.Stat(); err != nil {
			return both
		}
		if have, ok = ownerOf(fi); !ok {
			return both
		}
	}
	switch {
	case have.Uid != want.Uid:
		return both
	case have.Gid != want.Gid:
		return fs.ModeSetgid
	}
	return 0
}

// syncDir makes rel's directory entry durable. The file is in place
// already, so a failure is not the call's. The open is of a directory
// only, without blocking: what was swapped in for the directory since is
// refused rather than waited on (a named pipe, for a writer).
func syncDir(root *os.Root, rel string) {
	dir, err := root.OpenFile(filepath.Dir(rel), openDir, 0)
	if err != nil {
		return
	}
	_ = dir.Sync()
	dir.Close()
}

// The inode flags (FS_*_FL of linux/fs.h) that refuse an edit to root
// too, where permission bits would not.
const (
	flagImmutable  = 0x10 // chattr +i: no change at all
	flagAppendOnly = 0x20 // chattr +a: writes at the end only; no removal or rename
)

// flagError is a refusal the inode flags of the file or of its directory
// explain: reason says which, and what lifts it.
type flagError struct {
	err    error
	reason string
}

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// explain gives a refused edit of rel the reason inode flags give (on
// Linux): a permission error alone does not say why root was refused,
// nor what to do. For an existing file those are the file's own: an
// immutable directory does not refuse its files' edits, which are made
// in place. For a new one (made) they are the directory's. Other errors
// are returned as they are.
func explain(root *os.Root, rel string, made bool, err error) error {
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if made {
		if inodeFlags(root, filepath.Dir(rel))&flagImmutable != 0 {
			return flagError{err, "cannot be made: its directory is immutable (its inode flag i is set), so nothing may be added to it; removing the flag (chattr -i) allows it"}
		}
		return err
	}
	flags := inodeFlags(root, rel)
	switch {
	case flags&flagImmutable != 0:
		return flagError{err, "is immutable (its inode flag i is set): no one, root included, may change it; removing the flag (chattr -i) allows it"}
	case flags&flagAppendOnly != 0:
		return flagError{err, "is append-only (its inode flag a is set): it may only be added to at its end, and these tools rewrite it; removing the flag (chattr -a) allows it"}
	}
	return err
}
