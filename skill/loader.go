package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/toolbus/toolbus/internal/regularfile"
)

// Warning says why a skill was skipped. Path names the file (or the
// directory, when the directory itself is the problem).
type Warning struct {
	Path   string `json:"path" msgpack:"path"`
	Reason string `json:"reason" msgpack:"reason"`
}

// String returns "path: reason".
func (w Warning) String() string { return w.Path + ": " + w.Reason }

// LoaderOptions configure a Loader. A nil *LoaderOptions means the
// defaults.
type LoaderOptions struct {
	// ScanSubdirs also loads every sub-directory (at any depth) that holds a
	// SKILL.md. The root SKILL.md is always loaded.
	ScanSubdirs bool
	// Logger receives one warning per skipped skill, when the problem is
	// first seen; nil means slog.Default().
	Logger *slog.Logger
}

// Loader loads the skills of one directory: its root SKILL.md and, with
// ScanSubdirs, those of its sub-directories (in lexical order, root first;
// symbolic links to directories are not followed). A SKILL.md is read
// within the directory: a symbolic link is followed while it stays
// inside, and one that leads out of it (to another skill's file, to
// /proc/self/environ) skips that skill with a warning, so that a skills
// directory cannot publish a file of the worker's machine. What a
// directory costs is bounded, since every query loads it: a scan looks
// at no more than 10000 directory entries (a huge or deep tree is cut
// there, with a warning on the directory naming where; the tree is read
// level by level, each directory's SKILL.md looked for by name before
// the directories below are read, so a skill folder of many files
// leaves the skills beside it loaded) and descends MaxScanDepth
// directories at most (with a warning), and a loader holds at most
// MaxDirBytes of SKILL.md files (the skills after them are skipped, each
// with a warning).
//
// Load never fails. A missing directory, a missing or empty name or
// description, bad YAML or an unreadable file skips that skill with a
// Warning naming the file and the reason; the warning is logged once, when
// it first appears.
//
// Every Load checks each SKILL.md's modification time and size and re-reads
// only the files that changed, so edits take effect without a restart (a
// change that keeps both the size and the time stamp, within the file
// system's time resolution, is not seen). A Loader is safe for concurrent
// use.
//
// A read of the directory that does not return (a mount that stopped
// answering) holds up no caller for long: the directory is read by one
// goroutine at a time, outside any lock callers wait on, and the loads
// made while a read is under way share it (so a load may miss an edit
// made after that read began; the next one sees it). A load waits
// LoadWait at most (FirstLoadWait before the first read finished);
// past it, it returns the skills the last finished read found (none,
// before the first), with its warnings and one more on the directory
// saying it does not answer and for how long, while the read goes on.
// That is logged when the read is first late, and
// again every minute while it stays so. A stuck read holds one
// goroutine per loader, whatever the number of loads.
type Loader struct {
	dir  string
	scan bool
	log  *slog.Logger

	// cache and logged belong to the read under way: loaded runs one
	// read at a time, each after the last one finished.
	cache  map[string]cached // by SKILL.md path
	logged map[string]string // path → the reason last logged for it

	loaded latest[loadResult]
	wait   waitFor // LoadWait and FirstLoadWait as they were when it was made
}

// loadResult is what one read of the directory found: skills that no
// caller is given (they get copies).
type loadResult struct {
	skills []Skill
	warns  []Warning
}

// LoadWait is how long a Loader's Load waits for the read of its
// directory before it returns the skills last read, and how long a Set
// waits for all its loaders together.
const LoadWait = time.Second

// loadWait is LoadWait (a variable for tests).
var loadWait = LoadWait

// FirstLoadWait is how long a load waits for a Loader's first read, with
// no skills read before to fall back on: a large directory on a slow
// disk is not taken for an empty one (a worker starting would announce
// no skills), and a directory that does not answer from the start holds
// a load that long.
const FirstLoadWait = 10 * time.Second

// firstLoadWait is FirstLoadWait (a variable for tests).
var firstLoadWait = FirstLoadWait

type cached struct {
	mtime time.Time
	size  int64 // as the file reported it, for the cache's check
	held  int64 // the bytes read, for the budget
	skill *Skill
	warn  *Warning
}

// NewLoader returns a Loader for dir. A leading "~" is expanded to the home
// directory and the path is made absolute.
func NewLoader(dir string, opts *LoaderOptions) *Loader {
	if opts == nil {
		opts = &LoaderOptions{}
	}
	l := &Loader{dir: normalizeDir(dir), scan: opts.ScanSubdirs, log: opts.Logger, cache: map[string]cached{}, logged: map[string]string{},
		wait: waitFor{loadWait, firstLoadWait}}
	if l.log == nil {
		l.log = slog.Default()
	}
	return l
}

func normalizeDir(dir string) string {
	if dir == "~" || strings.HasPrefix(dir, "~/") || strings.HasPrefix(dir, "~"+string(filepath.Separator)) {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, dir[1:])
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Clean(dir)
}

// Dir returns the loader's normalised directory.
func (l *Loader) Dir() string { return l.dir }

// Load returns the directory's skills (root first) and a warning for each
// one it skipped. Returned skills are copies, their Metadata included: a
// caller may change them without changing the loader's. It waits
// LoadWait at most for a read of the directory (see Loader).
func (l *Loader) Load() ([]Skill, []Warning) {
	skills, warns := l.loadBy(l.wait.from(time.Now()))
	for i := range skills {
		skills[i] = skills[i].clone()
	}
	return skills, warns
}

// waitFor is how long loads wait: LoadWait, and FirstLoadWait while
// nothing was read yet (tests shorten them: each Loader and Set keeps
// those it was made with, which its reads under way may still use).
type waitFor struct{ load, first time.Duration }

// from is the times to wait until for loads begun at now.
func (w waitFor) from(now time.Time) waits {
	return waits{now.Add(w.load), now.Add(w.first)}
}

// waits are the times a load waits until: deadline, or first while the
// loader has read nothing yet (FirstLoadWait). A Set's loads share one.
type waits struct{ deadline, first time.Time }

// begin starts a read of the directory unless one is under way, so that
// a Set's loaders read at once, not one after another's wait.
func (l *Loader) begin() { l.loaded.start(l.read) }

// loadBy is Load waiting as w says, its skills' Metadata the loader's
// own, which the caller copies before it gives them out.
func (l *Loader) loadBy(w waits) ([]Skill, []Warning) {
	late := func(going time.Duration) {
		l.log.Warn("skill: the skill directory does not answer: using the skills last loaded while its read goes on", "dir", l.dir, "stuck_for", going.Round(time.Second))
	}
	wait := time.Until(w.deadline)
	if !l.loaded.finished() {
		wait = max(wait, time.Until(w.first))
	}
	r, going := l.loaded.get(l.read, wait, late)
	skills := slices.Clone(r.skills)
	warns := slices.Clone(r.warns)
	if going > 0 {
		warns = append(warns, Warning{Path: l.dir, Reason: fmt.Sprintf("skill directory does not answer: a read has been going for %s; the skills last loaded are used meanwhile", going.Round(time.Second))})
	}
	return skills, warns
}

// read reads the directory: the one read under way.
func (l *Loader) read() loadResult {
	skills, warns := l.readDir()
	return loadResult{skills, warns}
}

func (l *Loader) readDir() ([]Skill, []Warning) {
	st, err := os.Stat(l.dir)
	switch {
	case err != nil:
		clear(l.cache)
		return nil, []Warning{*l.warn(l.dir, dirReason(err))}
	case !st.IsDir():
		clear(l.cache)
		return nil, []Warning{*l.warn(l.dir, "skill directory is not a directory")}
	case !utf8.ValidString(l.dir):
		clear(l.cache)
		return nil, []Warning{*l.warn(l.dir, notUTF8Dir)}
	}
	root, err := openRoot(nil, l.dir)
	if err != nil {
		clear(l.cache)
		return nil, []Warning{*l.warn(l.dir, dirReason(err))}
	}
	defer root.Close()

	files, warns := l.findFiles(root)
	var skills []Skill
	seen := make(map[string]bool, len(files))
	budget := maxDirBytes
	for _, f := range files {
		seen[f] = true
		s, w := l.loadFile(root, f, budget)
		if w != nil {
			warns = append(warns, *w)
			continue
		}
		if s != nil {
			sk := *s // its Metadata copied for each caller out of the package
			sk.from = l.origin(root, f)
			skills = append(skills, sk)
			budget -= l.cache[f].held
		}
	}
	if !l.scan && len(skills) == 0 && len(warns) == 0 {
		if subs := skillSubdirs(root); len(subs) > 0 {
			warns = append(warns, *l.warn(l.dir, fmt.Sprintf("holds no SKILL.md of its own, and its sub-directories do (%s): give scan_subdirs: true to load them", strings.Join(subs, ", "))))
		}
	}
	for f := range l.cache {
		if !seen[f] {
			delete(l.cache, f)
		}
	}
	for p := range l.logged {
		if !slices.ContainsFunc(warns, func(w Warning) bool { return w.Path == p }) {
			delete(l.logged, p) // fixed: log it again if it breaks again
		}
	}
	return skills, warns
}

// skillSubdirs names (at most 3) sub-directories of root that hold a
// SKILL.md, looking at 1000 entries at most: a directory loaded without
// scan_subdirs that is a directory of skills.
func skillSubdirs(root *os.Root) []string {
	d, err := root.Open(".")
	if err != nil {
		return nil
	}
	entries, _ := d.ReadDir(1000)
	d.Close()
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var subs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if fi, err := root.Lstat(filepath.Join(e.Name(), FileName)); err == nil && !fi.IsDir() {
			if subs = append(subs, e.Name()); len(subs) == 3 {
				break
			}
		}
	}
	return subs
}

func dirReason(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "skill directory does not exist"
	}
	return "skill directory is not readable: " + err.Error()
}

// maxScan is how many directory entries a scan looks at (a variable for
// tests).
var maxScan = 10000

// MaxScanDepth is how many directories deep a scan descends below the
// loader's directory: each directory is opened by its path from there, a
// component at a time, so a chain of nested directories costs the
// square of its depth (9990 of them took minutes, on every query).
const MaxScanDepth = 16

// findFiles lists the SKILL.md files to load, root first, the others
// in the order of filepath.WalkDir, and warns about sub-directories it
// cannot list and about a scan cut short. The tree is read level by
// level, and each directory's SKILL.md is looked for by its name before
// any directory below it is read, so that a directory holding more
// entries than a scan looks at (a skill bundling node_modules) costs the
// skills beside it nothing. Each directory is read only as far as the
// entries left to look at, within root; the looks by name are one per
// directory met, so bounded by the entries too.
func (l *Loader) findFiles(root *os.Root) ([]string, []Warning) {
	files := []string{filepath.Join(l.dir, FileName)}
	if !l.scan {
		return files, nil
	}
	var warns []Warning
	var found []string // below the root, relative to it
	left := maxScan
	// tooDeep: a directory below MaxScanDepth was warned about; cut:
	// no entry is left to look at.
	tooDeep, cut := false, false
	level := []string{"."}
	for depth := 0; len(level) > 0; depth++ {
		var next []string
		for _, rel := range level {
			if rel != "." {
				// A directory of that name too: loadFile warns of it.
				if p := filepath.Join(rel, FileName); !isNotExist(root, p) {
					found = append(found, p)
				}
			}
			if cut {
				continue
			}
			d, err := root.OpenFile(rel, openDirNoFollow, 0)
			if err != nil {
				warns = append(warns, *l.warn(filepath.Join(l.dir, rel), "cannot list: "+err.Error()))
				continue
			}
			entries, err := d.ReadDir(left + 1)
			d.Close()
			if err != nil && !errors.Is(err, io.EOF) {
				warns = append(warns, *l.warn(filepath.Join(l.dir, rel), "cannot list: "+err.Error()))
			}
			if len(entries) > left {
				entries, cut = entries[:left], true
				warns = append(warns, *l.warn(l.dir, fmt.Sprintf("the scan stopped after looking at %d entries, in %s: the skills of the directories it did not read are not loaded", maxScan, filepath.Join(l.dir, rel))))
			}
			left -= len(entries)
			slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
			for _, e := range entries {
				p := filepath.Join(rel, e.Name())
				switch {
				case e.Name() == FileName: // looked for by its name
				case e.IsDir() && depth == MaxScanDepth:
					if !tooDeep {
						tooDeep = true
						warns = append(warns, *l.warn(filepath.Join(l.dir, p), fmt.Sprintf("the scan does not descend more than %d directories deep: the skills below are not loaded", MaxScanDepth)))
					}
				case e.IsDir():
					next = append(next, p)
				}
			}
		}
		level = next
	}
	// filepath.WalkDir's order: by the names on the way, one by one.
	slices.SortFunc(found, func(a, b string) int {
		return slices.Compare(strings.Split(a, string(filepath.Separator)), strings.Split(b, string(filepath.Separator)))
	})
	for _, p := range found {
		files = append(files, filepath.Join(l.dir, p))
	}
	return files, warns
}

// isNotExist says that nothing is at path within root (a link to
// nothing is something).
func isNotExist(root *os.Root, path string) bool {
	_, err := root.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// loadFile returns the skill in path, nil for a root directory without a
// SKILL.md, or a warning. path is read within root, the loader's
// directory, so that a link cannot lead it out. The file is opened once
// and looked at through the open file, and read no further than budget
// (and MaxSkillFile): a size seen before the read bounds nothing, as the
// file may grow meanwhile, or be one that reports size 0.
func (l *Loader) loadFile(root *os.Root, path string, budget int64) (*Skill, *Warning) {
	rel, err := filepath.Rel(l.dir, path)
	if err != nil {
		return nil, l.warn(path, "cannot read: "+err.Error())
	}
	if !utf8.ValidString(rel) {
		return nil, l.warn(path, notUTF8Dir)
	}
	// Looked at before it is opened: a FIFO or a device is refused
	// unopened (opening a FIFO releases a writer waiting for a reader,
	// opening a device runs its driver), on every load.
	if st, err := root.Stat(rel); err == nil && !st.Mode().IsRegular() {
		c := cached{mtime: st.ModTime(), size: st.Size(), warn: l.notRegular(path, st.Mode())}
		l.cache[path] = c
		return nil, c.warn
	}
	// Non-blocking, so that a FIFO put there since does not hang the
	// open; it is then refused as not a regular file.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		delete(l.cache, path)
		if errors.Is(err, fs.ErrNotExist) {
			if target, lerr := root.Readlink(rel); lerr == nil {
				return nil, l.warn(path, fmt.Sprintf("is a link to %q, which does not exist", target))
			}
			if filepath.Dir(path) == l.dir {
				return nil, nil // a skill root without SKILL.md is simply empty
			}
		}
		if _, serr := os.Stat(path); serr == nil && leadsOut(l.dir, path) {
			return nil, l.warn(path, "is a link to outside the skill directory, which is not followed")
		}
		return nil, l.warn(path, "cannot read: "+err.Error())
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		delete(l.cache, path)
		return nil, l.warn(path, "cannot read: "+err.Error())
	}
	overBudget := func() (*Skill, *Warning) {
		// Not cached: the budget left depends on the other files.
		return nil, l.warn(path, fmt.Sprintf("not loaded: the directory's skills before it leave %d of the %d bytes a skill directory may hold", budget, maxDirBytes))
	}
	if c, ok := l.cache[path]; ok && c.mtime.Equal(st.ModTime()) && c.size == st.Size() {
		if c.skill != nil && c.held > budget {
			return overBudget()
		}
		return c.skill, c.warn
	}
	if beforeRead != nil {
		beforeRead(path)
	}
	c := cached{mtime: st.ModTime(), size: st.Size()}
	switch {
	case !st.Mode().IsRegular():
		c.warn = l.notRegular(path, st.Mode())
	case st.Size() > MaxSkillFile:
		c.warn = l.warn(path, fmt.Sprintf("cannot read: %d bytes, over the limit of %d", st.Size(), MaxSkillFile))
	case st.Size() > budget:
		return overBudget()
	default:
		limit := min(budget, MaxSkillFile)
		doc, err := io.ReadAll(io.LimitReader(f, limit+1))
		switch {
		case err != nil:
			c.warn = l.warn(path, "cannot read: "+err.Error())
		case int64(len(doc)) > limit && limit < MaxSkillFile:
			return overBudget()
		case int64(len(doc)) > limit:
			c.warn = l.warn(path, fmt.Sprintf("cannot read: over the limit of %d bytes (it grew while read)", MaxSkillFile))
		default:
			if s, err := Parse(doc, filepath.Dir(path)); err != nil {
				c.warn = l.warn(path, err.Error())
			} else {
				s.UpdatedAt = st.ModTime()
				c.skill, c.held = &s, int64(len(doc))
			}
		}
	}
	l.cache[path] = c
	return c.skill, c.warn
}

// notUTF8Dir is the warning for a skill whose directory's path is not
// UTF-8: the model is given it (the prompt's <dir>), and the fleet (a
// msgpack str), as text.
const notUTF8Dir = "the path of its directory is not UTF-8 text, and the model and the fleet are given it as text: rename the directory (a UTF-8 name)"

// leadsOut says that path, within dir, resolves to a file outside it.
func leadsOut(dir, path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(dir, real)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// notRegular is the warning for a SKILL.md of mode m, not a regular file.
func (l *Loader) notRegular(path string, m fs.FileMode) *Warning {
	if m.IsDir() {
		return l.warn(path, "is a directory, not a file")
	}
	return l.warn(path, "cannot read: "+regularfile.NotRegular(m).Error())
}

// origin records the directory of the SKILL.md at path as this load
// finds it (not cached: the directory may be replaced while its SKILL.md
// keeps its time stamp), so that the skill's files are read from it and
// no other. A directory that cannot be looked at (it went meanwhile)
// gets an origin that no directory matches.
func (l *Loader) origin(root *os.Root, path string) *origin {
	rel, _ := filepath.Rel(l.dir, filepath.Dir(path))
	o := &origin{base: l.dir, rel: rel}
	o.dir, _ = root.Lstat(rel)
	return o
}

// warn builds a warning and logs it unless the same one was logged last
// time for that path.
func (l *Loader) warn(path, reason string) *Warning {
	if l.logged[path] != reason {
		l.logged[path] = reason
		l.log.Warn("skill: skipping", "path", path, "reason", reason)
	}
	return &Warning{Path: path, Reason: reason}
}

// Static is a fixed list of skills, for skills that do not come from a
// directory (built in, or received from elsewhere).
type Static []Skill

// Load returns copies of the skills, their Metadata's maps and slices
// included.
func (s Static) Load() ([]Skill, []Warning) {
	if len(s) == 0 {
		return nil, nil
	}
	out := make([]Skill, len(s))
	for i, sk := range s {
		out[i] = sk.clone()
	}
	return out, nil
}

// MaxSkillFile is the largest SKILL.md a loader reads, and MaxDirBytes
// the most bytes of SKILL.md files one loader holds: the skills after
// them are skipped with a warning.
const (
	MaxSkillFile = 1 << 20
	MaxDirBytes  = 32 << 20
)

// beforeRead, when set, is called with a SKILL.md's path between the
// look at its size and the read (for tests: a file that grows meanwhile).
var beforeRead func(path string)

// maxDirBytes is MaxDirBytes (a variable for tests).
var maxDirBytes int64 = MaxDirBytes
