package builtin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolbus/toolbus/internal/regularfile"
	"github.com/toolbus/toolbus/toolkit"
)

// workspace confines file access to one directory tree.
//
// A path is checked twice: resolve gives the model a precise error (which
// rule the path broke) and turns the path into a symlink-free path
// relative to the root; the file operation then goes through an os.Root
// held on that root, so a symlink swapped in between the check and the
// use still cannot lead outside.
//
// The root itself is opened once, when the workspace is, and held: the
// tree is the directory real named then. A call first checks that real
// still names it (current); one moved away, or swapped for a symbolic
// link or another directory, is refused rather than followed. One that
// was removed (rm -rf "$PWD" from a command) is made again at real, or
// the directory now there taken, provided real holds no symlink.
type workspace struct {
	// dir is the root as configured, made absolute (it may contain
	// symlinks); the model may use absolute paths under it.
	dir string
	// real is dir with every symlink resolved.
	real string

	mu   sync.Mutex
	held *os.Root // the directory real named when opened, or made again

	// limit bounds the sessions' directories of a workspace with
	// per-session directories; nil for a session's own.
	limit *sessionLimit
}

// openWorkspace makes dir (created if missing) the root of a workspace.
func openWorkspace(dir string) (*workspace, error) {
	if dir == "" {
		return nil, errors.New("builtin: no workspace directory configured (file, shell and python tools need one)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("builtin: creating workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("builtin: workspace %q is not a directory", dir)
	}
	held, err := openAt(real)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace %q: %w", dir, err)
	}
	return &workspace{dir: abs, real: real, held: held}, nil
}

// errReplaced is what openAt and current say of a directory whose path
// no longer names it.
var errReplaced = errors.New("moved or replaced")

// openAt opens the directory at real, a path without symlinks, and
// checks that what it opened is what real names (no link swapped in
// between).
func openAt(real string) (*os.Root, error) {
	if r, err := filepath.EvalSymlinks(real); err != nil {
		return nil, err
	} else if r != real {
		return nil, fmt.Errorf("%w: %s now goes through a symbolic link", errReplaced, real)
	}
	root, err := os.OpenRoot(dirOnly(real))
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%w: %s is no directory now", errReplaced, real)
	}
	if err != nil {
		return nil, err
	}
	if !sameDir(root, real) {
		root.Close()
		return nil, fmt.Errorf("%w: %s was replaced while it was opened", errReplaced, real)
	}
	return root, nil
}

// dirOnly is path as os.OpenRoot and Root.OpenRoot are to be given it:
// they open their path as a file before they look at what it is, and
// the open of a named pipe put there waits for a writer, for ever. Its
// "." is opened in a directory only: a pipe's path fails at once.
func dirOnly(path string) string {
	return path + string(filepath.Separator) + "."
}

// sameDir reports whether path, not followed if a link, is root's
// directory.
func sameDir(root *os.Root, path string) bool {
	held, err := root.Stat(".")
	if err != nil {
		return false
	}
	at, err := os.Lstat(path)
	return err == nil && os.SameFile(held, at)
}

// removed reports whether root's directory was removed: it has no links
// left (or cannot even be looked at).
func removed(root *os.Root) bool {
	fi, err := root.Stat(".")
	if err != nil {
		return true
	}
	n, ok := linkCount(fi)
	return ok && n == 0
}

// current returns the held root after checking that real still names
// it, making the workspace again if it was removed. The root is shared:
// callers do not close it.
func (ws *workspace) current() (*os.Root, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if sameDir(ws.held, ws.real) {
		return ws.held, nil
	}
	if !removed(ws.held) {
		return nil, ws.replaced()
	}
	// Removed: made again, or taken where another was made. The old
	// root is left to in-flight calls (and the garbage collector).
	if _, err := os.Lstat(ws.real); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(ws.real, 0o755); err != nil {
			return nil, toolkit.Errorf(toolkit.CodeUnavailable, "WorkspaceError: the workspace was removed and cannot be made again: %v", err)
		}
	}
	held, err := openAt(ws.real)
	if errors.Is(err, errReplaced) {
		return nil, ws.replaced()
	}
	if err != nil {
		return nil, toolkit.Errorf(toolkit.CodeUnavailable, "WorkspaceError: the workspace was removed and cannot be opened again: %v", err)
	}
	ws.held = held
	return held, nil
}

func (ws *workspace) replaced() error {
	return toolkit.Errorf(toolkit.CodeUnavailable,
		"WorkspaceError: the workspace directory %s was moved or replaced (by a symbolic link, another directory or a file) since the worker started; "+
			"the tools do not follow it out of the tree they were given. The operator must put it back or restart the worker.", ws.dir)
}

// within returns p relative to base when p (clean, absolute) is base or
// lies under it.
func within(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// maxPathBytes is the longest file_path the file tools take: Linux's
// PATH_MAX. The system takes no longer path, and resolve's walk and
// errors would cost in proportion to one of megabytes.
const maxPathBytes = 4096

// maxNameBytes is the longest name of a file the system takes, where it
// is known: Linux's NAME_MAX (255 bytes); elsewhere 0.
func maxNameBytes() int {
	if runtime.GOOS == "linux" {
		return 255
	}
	return 0
}

// namesFit refuses rel, p resolved, when a name in it is longer than the
// system takes, with the answer the system's refusal gets (pathError):
// in a session without a directory nothing exists to refuse it, and
// the directory would be made for a write that then fails.
func namesFit(p, rel string) error {
	if m := maxNameBytes(); m > 0 {
		for _, name := range strings.Split(rel, string(filepath.Separator)) {
			if len(name) > m {
				return pathError(p, syscall.ENAMETOOLONG)
			}
		}
	}
	return nil
}

// resolve checks a path given by the model and returns it relative to the
// workspace's real root with every symlink of its existing prefix
// resolved. The errors are results for the model (*toolkit.Error).
func (ws *workspace) resolve(p string) (string, error) {
	switch {
	case p == "":
		return "", toolkit.NewError(toolkit.CodeInvalidInput, "InvalidPathError: file_path is empty.")
	case len(p) > maxPathBytes:
		// Not quoted: it may be megabytes.
		return "", toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidPathError: file_path is %d bytes long; a path has at most %d bytes.", len(p), maxPathBytes)
	case strings.IndexByte(p, 0) >= 0:
		return "", toolkit.NewError(toolkit.CodeInvalidInput, "InvalidPathError: file_path contains a NUL byte.")
	}
	// First the path as written, cleaned: the reasons the model can act
	// on.
	base := ws.real
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		_, ok := within(ws.real, c)
		if !ok {
			_, ok = within(ws.dir, c)
		}
		if !ok {
			return "", ws.outside(p, "it is an absolute path outside the workspace")
		}
		base = string(filepath.Separator)
	} else if rel := filepath.Clean(p); rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", ws.outside(p, "its \"..\" components lead out of the workspace")
	}
	// Then as the system reads it, a name at a time: a symlink is
	// resolved before a ".." after it applies (sub-link/../f is f beside
	// the link's target, not beside the link). A name that does not
	// exist (a file or directory to create) is no link and is taken as
	// written.
	real := base
	for _, name := range strings.Split(p, string(filepath.Separator)) {
		switch name {
		case "", ".":
			continue
		case "..":
			real = filepath.Dir(real) // real has no links: its parent is its directory
			continue
		}
		next := filepath.Join(real, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			real = next
			continue
		}
		if err != nil {
			return "", pathError(p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if next, err = filepath.EvalSymlinks(next); err != nil {
				return "", toolkit.Errorf(toolkit.CodeToolError, "InvalidPathError: %q goes through a symbolic link that cannot be resolved (its target is missing, or it is a loop).", p)
			}
		}
		real = next
	}
	r, ok := within(ws.real, real)
	if !ok {
		return "", ws.outside(p, "a symbolic link on the way points outside the workspace")
	}
	// Cleaning drops a final "/" or "/.", and the walk a final "/.." with
	// the name before it, which the system would not: "notes/",
	// "notes/." or "notes/x/.." must not create a file "notes", nor
	// "f.txt/" open f.txt.
	sep := string(filepath.Separator)
	for _, end := range []string{sep, sep + ".", sep + ".."} {
		if strings.HasSuffix(p, end) {
			return "", toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidPathError: %q ends with %q, so it names a directory; the file tools work on files.", p, end)
		}
	}
	return r, nil
}

func (ws *workspace) outside(p, why string) error {
	return toolkit.Errorf(toolkit.CodeDenied,
		"PathOutsideWorkspaceError: %q is not allowed: %s. File tools only work inside the workspace %s; use a path relative to it.",
		p, why, ws.dir)
}

// pathError turns a file-system error into a message for the model,
// naming the path the model gave rather than the resolved one.
func pathError(p string, err error) error {
	var reason string
	var flagged flagError
	switch {
	case errors.As(err, &flagged):
		reason = flagged.reason
	case errors.Is(err, fs.ErrNotExist):
		reason = "does not exist"
	case errors.Is(err, fs.ErrPermission):
		reason = "is not accessible (permission denied)"
	case strings.Contains(err.Error(), "not a directory"):
		reason = "goes through something that is not a directory"
	case strings.Contains(err.Error(), "escapes from parent"), strings.Contains(err.Error(), "path escapes"):
		return toolkit.Errorf(toolkit.CodeDenied, "PathOutsideWorkspaceError: %q leads outside the workspace.", p)
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		reason = "cannot be used: " + err.Error()
	}
	return toolkit.Errorf(toolkit.CodeToolError, "FileError: %q %s.", p, reason)
}

// scopeKey carries a call's identity and session to the tools of
// per-session workspaces.
type scopeKey struct{}

// callScope is who a call is for: its identity and its session, kept
// apart. The session scope joins them with NUL bytes, which a caller of
// the toolkit may put in either, so split again it could name another's.
type callScope struct{ identity, session string }

// withScope wraps a tool's handler to hand it its call's identity and
// session.
func withScope(t *toolkit.Tool) {
	h := t.Handler
	t.Handler = func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return h(context.WithValue(ctx, scopeKey{}, callScope{call.Identity, call.Session}), call, w)
	}
}

// sessionDir is a session's own directory under the workspace:
// sessions/<session> for an anonymous caller's, identities/<identity>/
// <session> for an identity's. A session name that is not one token of
// [A-Za-z0-9_-] is written "=" + its unpadded base64url (the default
// session, "", is "="), a long one by its SHA-256.
func sessionDir(identity, session string) string {
	if identity == "" {
		return filepath.Join("sessions", dirName(session))
	}
	// The identity is encoded as a session name is: one made up by a
	// caller of the toolkit ("..", "a/b") must not name another
	// directory.
	return filepath.Join("identities", dirName(identity), dirName(session))
}

// dirName is name as one directory: itself when it is one token of
// [A-Za-z0-9_-], else "=" + its unpadded base64url, or "#" + its SHA-256
// when that is long.
//
// The name keeps the case of name's letters, and base64url is made of
// both cases, so on a file system that folds case two names may be one
// directory ("Bob" and "bob"). A name is not folded, nor encoded in one
// case, on such a system: the directories existing sessions have on
// every system would then not be found, and where two sessions already
// share one, moving it would give their files to one of them.
func dirName(name string) string {
	d := name
	if !toolkit.ValidName(name) {
		d = "=" + base64.RawURLEncoding.EncodeToString([]byte(name))
	}
	if len(d) > 200 {
		sum := sha256.Sum256([]byte(name))
		d = "#" + hex.EncodeToString(sum[:])
	}
	return d
}

// forSession is the workspace of the call in ctx's session, and its
// root checked (current) for one operation: ws itself, or its session's
// own directory when per is set, made if missing when create is. The
// caller calls release when done with the root. A call that does not
// create gets, for a session without a directory, a workspace with a nil
// root: its paths can be resolved, but nothing exists there. A
// workspace removed since (a command's rm -rf "$PWD") is made again:
// otherwise no tool, the shell included, could work until a restart. A
// session's directory is opened through the workspace's root: a link
// put in its place may lead elsewhere in the workspace, never out of
// it.
func (ws *workspace) forSession(ctx context.Context, per, create bool) (s *workspace, root *os.Root, release func(), err error) {
	root, err = ws.current()
	if err != nil {
		return nil, nil, nil, err
	}
	if !per {
		return ws, root, func() {}, nil
	}
	scope, _ := ctx.Value(scopeKey{}).(callScope)
	name := sessionDir(scope.identity, scope.session)
	fail := func(err error) (*workspace, *os.Root, func(), error) {
		return nil, nil, nil, toolkit.Errorf(toolkit.CodeUnavailable, "WorkspaceError: the session's workspace cannot be opened: %v", err)
	}
	absent := func() (*workspace, *os.Root, func(), error) {
		return &workspace{dir: filepath.Join(ws.dir, name), real: filepath.Join(ws.real, name)}, nil, func() {}, nil
	}
	if create {
		if err := ws.limit.room(root, name); err != nil {
			return nil, nil, nil, err
		}
		if err := root.MkdirAll(name, 0o755); err != nil {
			if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTDIR) {
				err = notDir(root, name, err)
			}
			return fail(err)
		}
	} else if _, err := root.Lstat(name); errors.Is(err, fs.ErrNotExist) {
		return absent()
	} else if errors.Is(err, syscall.ENOTDIR) {
		return fail(notDir(root, name, err))
	} else if err != nil {
		return fail(err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(ws.real, name))
	if !create && errors.Is(err, fs.ErrNotExist) {
		return absent() // removed meanwhile, or a link to nothing
	}
	if err != nil {
		return fail(err)
	}
	rel, ok := within(ws.real, real)
	if !ok {
		return fail(fmt.Errorf("%s leads outside the workspace", name))
	}
	sr, err := root.OpenRoot(dirOnly(rel))
	if !create && errors.Is(err, fs.ErrNotExist) {
		return absent()
	}
	if errors.Is(err, syscall.ENOTDIR) {
		err = notDir(root, name, err)
	}
	if err != nil {
		return fail(err)
	}
	if !sameDir(sr, real) {
		sr.Close()
		return fail(fmt.Errorf("%s was replaced while it was opened", name))
	}
	s = &workspace{dir: filepath.Join(ws.dir, name), real: real, held: sr}
	return s, sr, func() { sr.Close() }, nil
}

// notDir names what stands where the directory name, or one above it,
// should be, for err, an error of making name that says something
// exists there.
func notDir(root *os.Root, name string, err error) error {
	at := ""
	for _, part := range strings.Split(name, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		fi, lerr := root.Lstat(at)
		if lerr != nil {
			break
		}
		kind := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if fi, lerr = root.Stat(at); lerr == nil && !fi.IsDir() {
				kind = "a symbolic link to " + regularfile.Kind(fi.Mode())
			}
		} else if !fi.IsDir() {
			kind = regularfile.Kind(fi.Mode())
		}
		if kind != "" {
			return fmt.Errorf("%s is not a directory but %s: the operator must remove it", at, kind)
		}
	}
	return err
}

// sessionLimit bounds how many sessions' directories a workspace holds
// (Config.MaxSessionWorkspaces).
type sessionLimit struct {
	max int

	mu      sync.Mutex // held while a session's directory is made
	n       int        // directories as counted, and made since
	counted time.Time  // when counted; zero: never
}

// recountEvery is how often a workspace's session directories are
// counted again at most: directories removed meanwhile, or made by
// other workers of a shared workspace, are seen then.
const recountEvery = time.Second

// room makes name, a session's directory missing from root, when the
// limit leaves room for it; it does nothing when name exists (of any
// kind: making it says what is wrong). Its error is the call's.
func (l *sessionLimit) room(root *os.Root, name string) error {
	if l == nil {
		return nil
	}
	if _, err := root.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := root.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		return nil // made meanwhile
	}
	if l.counted.IsZero() || time.Since(l.counted) >= recountEvery {
		n, err := countSessionDirs(root)
		if err != nil {
			return toolkit.Errorf(toolkit.CodeUnavailable, "WorkspaceError: the session directories of the workspace cannot be counted: %v", err)
		}
		l.n, l.counted = n, time.Now()
	}
	if l.n >= l.max {
		return toolkit.Errorf(toolkit.CodeUnavailable,
			"WorkspaceError: the workspace holds %d session directories, and its limit is %d, so this session gets none: nothing can be written nor run in it on this worker (it can still view files, of which it has none). "+
				"The operator can remove the directories of sessions that ended, under sessions/ and identities/ in the workspace, or raise the limit "+
				"(MaxSessionWorkspaces of builtin.Config, builtins.max_session_workspaces in the worker's configuration).", l.n, l.max)
	}
	if err := root.MkdirAll(name, 0o755); err != nil {
		return nil // making it again says why
	}
	l.n++
	return nil
}

// countSessionDirs counts the entries of sessions/ and of every
// identities/<identity>/ under root, reading a directory a batch of
// names at a time. What is not a directory there holds none (nor is
// opened: a named pipe's open would wait for a writer).
func countSessionDirs(root *os.Root) (int, error) {
	count := func(dir string, each func(name string) error) (int, error) {
		d, err := root.Open(dirOnly(dir))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		defer d.Close()
		n := 0
		for {
			names, err := d.Readdirnames(1024)
			for _, name := range names {
				if each != nil {
					if err := each(name); err != nil {
						return n, err
					}
				}
			}
			n += len(names)
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
		}
	}
	n, err := count("sessions", nil)
	if err != nil {
		return 0, err
	}
	_, err = count("identities", func(identity string) error {
		m, err := count(filepath.Join("identities", identity), nil)
		n += m
		return err
	})
	return n, err
}
