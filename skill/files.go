package skill

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/toolbus/toolbus/bus/wire"
)

// A skill's other files (scripts, references, templates next to its
// SKILL.md) are served to the fleet for the gateway, which offers them as
// MCP resources skill://<name>/<path>. Only regular files inside the
// skill's directory are served: the directory is opened as an os.Root, so
// no path or ".." leaves it, and no symbolic link is followed, even one
// that stays inside (it could name a hidden file); names starting with "."
// and names that are not UTF-8 (ReadFile takes fs.ValidPath paths only),
// and everything under them, are left out, as are files larger than
// MaxFileBytes, and the listing stops at MaxFiles files, MaxFileDepth
// directories deep, or after looking at maxWalk entries.
const (
	MaxFiles     = 200
	MaxFileBytes = 512 << 10
	MaxFileDepth = 6
)

// beforeFileOpen, when set, runs between ReadFile's look at the path and
// its open (a hook for tests).
var beforeFileOpen func()

// maxWalk is how many directory entries a listing looks at (a variable
// for tests).
var maxWalk = 10000

// Files lists the files of the skill's directory other than SKILL.md, as
// slash-separated paths relative to it, sorted; truncated says MaxFiles
// or the entries looked at cut the list short (it then holds the files
// met first, in the directories' own order). A skill without a directory
// has none.
func (s Skill) Files() (files []string, truncated bool, err error) {
	if s.Dir == "" {
		return nil, false, nil
	}
	root, err := s.openDir()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil // a skill given in Go names a directory it need not have
	}
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	seen := 0
	// Each directory is read a batch at a time, so that a huge one costs
	// no more than the entries looked at (fs.WalkDir reads, and sorts, a
	// whole directory first). A cut-short listing has the files met
	// first in the directories' own order.
	var walk func(dir string) bool // false: stop
	walk = func(dir string) bool {
		d, err := root.OpenFile(dir, openDirNoFollow, 0)
		if err != nil {
			return true // an unreadable directory is left out
		}
		defer d.Close()
		for {
			entries, err := d.ReadDir(256)
			for _, e := range entries {
				if seen++; seen > maxWalk {
					truncated = true
					return false
				}
				p := path.Join(dir, e.Name())
				switch {
				case strings.HasPrefix(e.Name(), "."), !utf8.ValidString(e.Name()):
				case e.IsDir():
					if strings.Count(p, "/") < MaxFileDepth && !walk(p) {
						return false
					}
				case !e.Type().IsRegular() || p == FileName:
				default:
					if info, err := root.Lstat(p); err != nil || !info.Mode().IsRegular() || info.Size() > MaxFileBytes {
						continue
					}
					if len(files) == MaxFiles {
						truncated = true
						return false
					}
					files = append(files, p)
				}
			}
			if err != nil {
				return true // the end, or an unreadable rest
			}
		}
	}
	walk(".")
	slices.Sort(files)
	return files, truncated, nil
}

// ReadFile reads one of the skill's files (a path Files lists, so at
// most MaxFileDepth directories deep) into a reply: Text when it is
// UTF-8, Blob (base64) otherwise, with a MIME type from its extension.
func (s Skill) ReadFile(name string) (wire.SkillReply, error) {
	// Deeper than Files goes is no file of the skill's (and each
	// directory on the way is looked at by its path: a cost that grows
	// as the square of the depth).
	if s.Dir == "" || strings.Count(name, "/") > MaxFileDepth || !fs.ValidPath(name) || name == "." || slices.ContainsFunc(strings.Split(name, "/"), func(part string) bool { return strings.HasPrefix(part, ".") }) {
		return wire.SkillReply{}, fmt.Errorf("skill %q has no file %q", s.Name, name)
	}
	root, err := s.openDir()
	if err != nil {
		return wire.SkillReply{}, err
	}
	defer root.Close()
	// No link on the way, and a regular file at the end, before opening.
	parts := strings.Split(name, "/")
	for i := range parts {
		info, err := root.Lstat(strings.Join(parts[:i+1], "/"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return wire.SkillReply{}, fmt.Errorf("skill %q has no file %q", s.Name, name)
		case err != nil:
			return wire.SkillReply{}, fmt.Errorf("skill %q: %w", s.Name, err)
		case info.Mode()&fs.ModeSymlink != 0:
			return wire.SkillReply{}, fmt.Errorf("skill %q: %q is reached through a link, which skills do not serve", s.Name, name)
		case i == len(parts)-1 && !info.Mode().IsRegular():
			return wire.SkillReply{}, fmt.Errorf("skill %q: %q is not a regular file", s.Name, name)
		}
	}
	if beforeFileOpen != nil {
		beforeFileOpen()
	}
	f, err := openNoLinks(root, parts)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return wire.SkillReply{}, fmt.Errorf("skill %q has no file %q", s.Name, name)
	case errors.Is(err, syscall.ELOOP):
		return wire.SkillReply{}, fmt.Errorf("skill %q: %q is reached through a link, which skills do not serve", s.Name, name)
	case err != nil:
		return wire.SkillReply{}, fmt.Errorf("skill %q: %w", s.Name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return wire.SkillReply{}, fmt.Errorf("skill %q: %w", s.Name, err)
	case !info.Mode().IsRegular():
		return wire.SkillReply{}, fmt.Errorf("skill %q: %q is not a regular file", s.Name, name)
	case info.Size() > MaxFileBytes:
		return wire.SkillReply{}, fmt.Errorf("skill %q: %q is larger than %d bytes", s.Name, name, MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return wire.SkillReply{}, fmt.Errorf("skill %q: %w", s.Name, err)
	}
	if len(data) > MaxFileBytes {
		return wire.SkillReply{}, fmt.Errorf("skill %q: %q is larger than %d bytes", s.Name, name, MaxFileBytes)
	}
	typ := MIMEType(name)
	if utf8.Valid(data) {
		if typ == "" {
			typ = "text/plain"
		}
		return wire.SkillReply{Text: string(data), MIMEType: typ}, nil
	}
	if typ == "" {
		typ = "application/octet-stream"
	}
	return wire.SkillReply{Blob: base64.StdEncoding.EncodeToString(data), MIMEType: typ}, nil
}

// openDir opens the skill's directory as a root that no path or link
// leaves. A skill from a Loader is opened within the loader's directory,
// and only while it is the directory the load found there: one swapped
// since for a link (out, or to another place inside) or for another
// directory is refused. A skill given in Go is opened at its Dir (an
// error wrapping fs.ErrNotExist when there is none).
func (s Skill) openDir() (*os.Root, error) {
	if s.from == nil {
		root, err := openRoot(nil, s.Dir)
		if err != nil {
			return nil, fmt.Errorf("skill %q: %w", s.Name, err)
		}
		return root, nil
	}
	replaced := fmt.Errorf("skill %q: its directory %s was removed or replaced since the skill was loaded, and is not read", s.Name, s.Dir)
	base, err := openRoot(nil, s.from.base)
	if err != nil {
		return nil, replaced
	}
	defer base.Close()
	root, err := openRoot(base, s.from.rel)
	if err != nil {
		return nil, replaced
	}
	if st, err := root.Stat("."); err != nil || s.from.dir == nil || !os.SameFile(st, s.from.dir) {
		root.Close()
		return nil, replaced
	}
	return root, nil
}

// openRoot opens the directory dir (within parent, or from the working
// directory when parent is nil) as an os.Root, and nothing else:
// os.OpenRoot and Root.OpenRoot open their path as a file before they
// look at what it is, and the open of a FIFO put there waits for a
// writer, forever. The directory is opened as one first (a FIFO is
// refused at once), and the root made of that very directory through
// /proc/self/fd; without /proc, of its path again.
func openRoot(parent *os.Root, dir string) (*os.Root, error) {
	var d *os.File
	var err error
	if parent == nil {
		d, err = os.OpenFile(dir, openDirOnly, 0)
	} else {
		d, err = parent.OpenFile(dir, openDirOnly, 0)
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if root, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(d.Fd()))); err == nil {
		return root, nil
	}
	if parent == nil {
		return os.OpenRoot(dir)
	}
	return parent.OpenRoot(dir)
}

// MIMEType is the type of a skill's file by its extension: text/markdown
// for .md, the system's type for others, "" when unknown.
func MIMEType(name string) string {
	if ext := path.Ext(name); ext == ".md" {
		return "text/markdown"
	} else if ext != "" {
		return mime.TypeByExtension(ext)
	}
	return ""
}
