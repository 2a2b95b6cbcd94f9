package skill

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
)

// writeSkill writes dir/SKILL.md and returns its path.
func writeSkill(t *testing.T, dir, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func skillDoc(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n" + body + "\n"
}

func newLogger(t *testing.T) (*slog.Logger, *natstest.Buffer) {
	t.Helper()
	b := &natstest.Buffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// skillTree builds the fixture of the 2.x loader tests: a root skill, a
// sub-directory skill and a nested one.
func skillTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeSkill(t, root, skillDoc("root_skill", "A skill in the root directory", "This is the root skill content."))
	writeSkill(t, filepath.Join(root, "subdir1"), skillDoc("subdir1_skill", "A skill in subdirectory 1", "This is the subdir1 skill content."))
	writeSkill(t, filepath.Join(root, "subdir1", "subdir2"), skillDoc("subdir2_skill", "A skill in nested subdirectory 2", "This is the subdir2 skill content."))
	return root
}

func names(skills []Skill) []string {
	out := make([]string, len(skills))
	for i, s := range skills {
		out[i] = s.Name
	}
	return out
}

func TestLoaderScanSubdirs(t *testing.T) {
	root := skillTree(t)
	tests := []struct {
		scan bool
		want []string
	}{
		{false, []string{"root_skill"}},
		{true, []string{"root_skill", "subdir1_skill", "subdir2_skill"}},
	}
	for _, tt := range tests {
		log, _ := newLogger(t)
		skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: tt.scan, Logger: log}).Load()
		if len(warns) != 0 {
			t.Fatalf("scan=%v: warnings %v", tt.scan, warns)
		}
		if got := strings.Join(names(skills), ","); got != strings.Join(tt.want, ",") {
			t.Fatalf("scan=%v: got %s, want %v", tt.scan, got, tt.want)
		}
		for _, s := range skills {
			if s.Description == "" || !filepath.IsAbs(s.Dir) || !strings.Contains(s.Markdown, "skill content.") || s.UpdatedAt.IsZero() {
				t.Fatalf("incomplete skill %+v", s)
			}
		}
	}
}

func TestLoaderFields(t *testing.T) {
	root := skillTree(t)
	skills, _ := NewLoader(root, nil).Load()
	if len(skills) != 1 {
		t.Fatalf("got %d skills", len(skills))
	}
	s := skills[0]
	if s.Name != "root_skill" || s.Description != "A skill in the root directory" || s.Dir != root ||
		s.Markdown != "This is the root skill content." || s.UpdatedAt.IsZero() {
		t.Fatalf("got %+v", s)
	}
}

func TestLoaderNoSkill(t *testing.T) {
	log, buf := newLogger(t)
	skills, warns := NewLoader(t.TempDir(), &LoaderOptions{ScanSubdirs: true, Logger: log}).Load()
	if len(skills) != 0 || len(warns) != 0 {
		t.Fatalf("empty dir: skills %v, warnings %v", skills, warns)
	}
	if buf.String() != "" {
		t.Fatalf("logged %q", buf.String())
	}
}

func TestLoaderBadDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, reason string
	}{
		{"missing", filepath.Join(t.TempDir(), "nope"), "skill directory does not exist"},
		{"a file", file, "skill directory is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf := newLogger(t)
			l := NewLoader(tt.dir, &LoaderOptions{Logger: log})
			for range 3 {
				skills, warns := l.Load()
				if len(skills) != 0 || len(warns) != 1 || warns[0].Path != tt.dir || warns[0].Reason != tt.reason {
					t.Fatalf("skills %v, warnings %v", skills, warns)
				}
			}
			if n := strings.Count(buf.String(), tt.reason); n != 1 {
				t.Fatalf("logged %d times, want once:\n%s", n, buf.String())
			}
		})
	}
}

func TestLoaderExpandsHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeSkill(t, filepath.Join(home, "skills"), skillDoc("h", "home skill", "body"))
	l := NewLoader("~/skills", nil)
	if l.Dir() != filepath.Join(home, "skills") {
		t.Fatalf("dir = %q", l.Dir())
	}
	skills, warns := l.Load()
	if len(skills) != 1 || len(warns) != 0 || skills[0].Dir != filepath.Join(home, "skills") {
		t.Fatalf("skills %v, warnings %v", skills, warns)
	}
	rel := NewLoader("relative/dir", nil)
	if !filepath.IsAbs(rel.Dir()) {
		t.Fatalf("relative dir not made absolute: %q", rel.Dir())
	}
}

// A bad skill is skipped with a warning that names its file; the others
// load; fixing the file brings it back without a new Loader.
func TestLoaderSkipsBadSkills(t *testing.T) {
	root := skillTree(t)
	bad := map[string]string{
		"no_name":   "---\ndescription: d\n---\nbody",
		"no_desc":   "---\nname: x\n---\nbody",
		"bad_yaml":  "---\nname: [x\ndescription: d\n---\nbody",
		"no_fm":     "just markdown",
		"not_close": "---\nname: x\ndescription: d\n",
	}
	paths := map[string]string{}
	for dir, doc := range bad {
		paths[dir] = writeSkill(t, filepath.Join(root, "bad", dir), doc)
	}
	log, buf := newLogger(t)
	l := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: log})
	for range 2 {
		skills, warns := l.Load()
		if got := strings.Join(names(skills), ","); got != "root_skill,subdir1_skill,subdir2_skill" {
			t.Fatalf("skills %s", got)
		}
		if len(warns) != len(bad) {
			t.Fatalf("warnings %v", warns)
		}
		for _, w := range warns {
			found := false
			for _, p := range paths {
				found = found || w.Path == p
			}
			if !found || w.Reason == "" || !strings.HasPrefix(w.String(), w.Path+": ") {
				t.Fatalf("warning %+v does not name a bad file", w)
			}
		}
	}
	for _, p := range paths {
		if n := strings.Count(buf.String(), p); n != 1 {
			t.Fatalf("%s logged %d times, want once:\n%s", p, n, buf.String())
		}
	}

	writeSkill(t, filepath.Join(root, "bad", "no_name"), skillDoc("fixed", "now valid", "ok"))
	skills, warns := l.Load()
	if len(warns) != len(bad)-1 || !strings.Contains(strings.Join(names(skills), ","), "fixed") {
		t.Fatalf("after the fix: skills %v, warnings %v", names(skills), warns)
	}
}

func TestLoaderUnreadable(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("file modes do not stop root or windows")
	}
	root := t.TempDir()
	p := writeSkill(t, root, skillDoc("a", "b", "c"))
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	skills, warns := NewLoader(root, &LoaderOptions{Logger: slog.New(slog.DiscardHandler)}).Load()
	if len(skills) != 0 || len(warns) != 1 || warns[0].Path != p || !strings.HasPrefix(warns[0].Reason, "cannot read") {
		t.Fatalf("skills %v, warnings %v", skills, warns)
	}
}

// The cache is keyed by modification time and size: an unchanged stamp
// serves the cached skill, a new one reloads it.
func TestLoaderReloadsOnChange(t *testing.T) {
	root := t.TempDir()
	p := writeSkill(t, root, skillDoc("root_skill", "first", "first body"))
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(p, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	l := NewLoader(root, nil)
	first, _ := l.Load()
	if len(first) != 1 || first[0].Description != "first" || !first[0].UpdatedAt.Equal(stamp) {
		t.Fatalf("first load %+v", first)
	}

	// Same size, same stamp: served from the cache.
	writeSkill(t, root, skillDoc("root_skill", "other", "other body"))
	if err := os.Chtimes(p, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	cachedLoad, _ := l.Load()
	if cachedLoad[0].Description != "first" {
		t.Fatalf("file re-read although unchanged: %+v", cachedLoad[0])
	}

	// A new stamp: reloaded.
	later := stamp.Add(time.Second)
	writeSkill(t, root, skillDoc("modified_root_skill", "Modified skill description", "This is the modified content."))
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	reloaded, _ := l.Load()
	if reloaded[0].Name != "modified_root_skill" || reloaded[0].Description != "Modified skill description" ||
		reloaded[0].Markdown != "This is the modified content." || !reloaded[0].UpdatedAt.Equal(later) {
		t.Fatalf("not reloaded: %+v", reloaded[0])
	}

	// Removing the file removes the skill.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if gone, warns := l.Load(); len(gone) != 0 || len(warns) != 0 {
		t.Fatalf("after removal: %v %v", gone, warns)
	}
}

func TestLoaderConcurrent(t *testing.T) {
	root := skillTree(t)
	l := NewLoader(root, &LoaderOptions{ScanSubdirs: true})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if skills, _ := l.Load(); len(skills) != 3 {
					t.Errorf("got %d skills", len(skills))
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLoaderRefusesHostileFiles: a FIFO named SKILL.md is refused at once
// (not read, which would block), and so is a SKILL.md over MaxSkillFile.
func TestLoaderRefusesHostileFiles(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "pipe", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ostest.Mkfifo(t, fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := writeSkill(t, filepath.Join(root, "huge"), skillDoc("huge", "too big", strings.Repeat("x", MaxSkillFile)))
	done := make(chan struct{})
	var warns []Warning
	go func() {
		defer close(done)
		_, warns = NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).Load()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loader hangs on a FIFO")
	}
	reasons := map[string]string{}
	for _, w := range warns {
		reasons[w.Path] = w.Reason
	}
	if !strings.Contains(reasons[fifo], "not a regular file") || !strings.Contains(reasons[huge], "over the limit of 1048576") {
		t.Fatalf("warnings %v", reasons)
	}
}

// TestLoaderRefusesLinksOut: a SKILL.md that is a symbolic link out of
// the skill directory (to another skill's file, to /proc/self/environ)
// is not read, so a skills directory cannot publish a file of the
// worker's machine; a link that stays inside is followed.
func TestLoaderRefusesLinksOut(t *testing.T) {
	outside := t.TempDir()
	secret := writeSkill(t, outside, skillDoc("secret", "a private skill", "private body"))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "shared.md"), []byte(skillDoc("inside", "linked inside", "ok")), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		filepath.Join(root, FileName):                     secret,
		filepath.Join(root, "sub", FileName):              "../../" + filepath.Base(outside) + "/" + FileName,
		filepath.Join(root, "env", FileName):              "/proc/self/environ",
		filepath.Join(root, "in", FileName):               "../shared.md",
		filepath.Join(root, "hop", "link", "placeholder"): "",
	}
	for link, target := range links {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if target != "" {
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A directory on the way that links out.
	if err := os.Remove(filepath.Join(root, "hop", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "hop", "link")); err != nil {
		t.Fatal(err)
	}
	for _, scan := range []bool{false, true} {
		skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: scan, Logger: slog.New(slog.DiscardHandler)}).Load()
		for _, s := range skills {
			if s.Name == "secret" || strings.Contains(s.Markdown, "private") {
				t.Fatalf("scan %v: a file outside the directory was loaded: %+v", scan, s)
			}
		}
		want := map[string]bool{filepath.Join(root, FileName): true}
		if scan {
			want[filepath.Join(root, "sub", FileName)] = true
			want[filepath.Join(root, "env", FileName)] = true
			if got := strings.Join(names(skills), ","); got != "inside" {
				t.Errorf("scan: skills %s, want the link inside followed", got)
			}
		}
		for _, w := range warns {
			if !want[w.Path] {
				t.Errorf("scan %v: unexpected warning %v", scan, w)
			}
			if !strings.Contains(w.Reason, "outside the skill directory") {
				t.Errorf("scan %v: warning %v does not say why", scan, w)
			}
			delete(want, w.Path)
		}
		if len(want) > 0 {
			t.Errorf("scan %v: no warning for %v", scan, want)
		}
	}
}

// TestLoaderBounded: a scan looks at a bounded number of directory
// entries (a directory of a million files costs no more than maxScan on
// every query), and a loader holds a bounded number of SKILL.md bytes;
// what is cut off is a warning, and the skills beside it still load.
func TestLoaderBounded(t *testing.T) {
	defer func(n int, b int64) { maxScan, maxDirBytes = n, b }(maxScan, maxDirBytes)
	maxScan, maxDirBytes = 100, 1<<20

	root := t.TempDir()
	writeSkill(t, root, skillDoc("root_skill", "d", "root"))
	writeSkill(t, filepath.Join(root, "a"), skillDoc("a", "d", "a"))
	big := filepath.Join(root, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(big, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSkill(t, filepath.Join(root, "z"), skillDoc("z", "d", "after the big directory"))
	log, buf := newLogger(t)
	l := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: log})
	for range 2 {
		skills, warns := l.Load()
		if got := strings.Join(names(skills), ","); got != "root_skill,a,z" {
			t.Fatalf("skills %s", got)
		}
		if len(warns) != 1 || warns[0].Path != root || !strings.Contains(warns[0].Reason, "100 entries") {
			t.Fatalf("warnings %v", warns)
		}
	}
	if n := strings.Count(buf.String(), "100 entries"); n != 1 {
		t.Fatalf("the cut-off logged %d times, want once:\n%s", n, buf.String())
	}

	// Bytes: the skills after the budget is spent are skipped.
	root = t.TempDir()
	pad := strings.Repeat("x", 400<<10)
	for _, n := range []string{"s1", "s2", "s3"} {
		writeSkill(t, filepath.Join(root, n), skillDoc(n, "d", pad))
	}
	skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).Load()
	if got := strings.Join(names(skills), ","); got != "s1,s2" {
		t.Fatalf("skills %s", got)
	}
	if len(warns) != 1 || warns[0].Path != filepath.Join(root, "s3", FileName) || !strings.Contains(warns[0].Reason, "1048576 bytes") {
		t.Fatalf("warnings %v", warns)
	}
}

// TestLoaderBudgetBoundsTheRead: what a loader holds is bounded by the
// bytes it reads, not by the sizes it saw: a SKILL.md that grows between
// the look at its size and the read (or reports size 0 as /proc files
// do) is read no further than the budget left, and refused with a
// warning; the skills after it that fit still load.
func TestLoaderBudgetBoundsTheRead(t *testing.T) {
	defer func(b int64, h func(string)) { maxDirBytes, beforeRead = b, h }(maxDirBytes, beforeRead)
	maxDirBytes = 4 << 10
	root := t.TempDir()
	pad := strings.Repeat("x", 1500)
	writeSkill(t, filepath.Join(root, "a"), skillDoc("a", "d", pad))
	grows := writeSkill(t, filepath.Join(root, "b"), "") // size 0 when looked at
	writeSkill(t, filepath.Join(root, "c"), skillDoc("c", "d", pad))
	beforeRead = func(p string) {
		if p == grows {
			if err := os.WriteFile(grows, []byte(skillDoc("b", "d", strings.Repeat("y", 3000))), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	l := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)})
	for i := range 2 { // the second load sees its new size
		skills, warns := l.Load()
		held := 0
		for _, s := range skills {
			held += len(s.Markdown)
		}
		if got := strings.Join(names(skills), ","); got != "a,c" || int64(held) > maxDirBytes {
			t.Fatalf("load %d: skills %s holding %d bytes, want a,c within %d", i, got, held, maxDirBytes)
		}
		if len(warns) != 1 || warns[0].Path != grows || !strings.Contains(warns[0].Reason, "of the 4096 bytes a skill directory may hold") {
			t.Fatalf("load %d: warnings %v", i, warns)
		}
		beforeRead = nil
	}
}

// A caller that edits a loaded skill's front matter changes its copy
// only: the loader's cache (and every later query) keeps the file's.
func TestLoaderReturnsCopies(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "---\nname: a\ndescription: d\ntags: [x, y]\nowner:\n  team: t\n---\nbody\n")
	for _, src := range []Source{NewLoader(dir, nil), Static{{Name: "a", Metadata: map[string]any{
		"tags": []any{"x", "y"}, "owner": map[string]any{"team": "t"},
	}}}} {
		got, _ := src.Load()
		if len(got) != 1 {
			t.Fatalf("%T: %d skills", src, len(got))
		}
		m := got[0].Metadata
		m["extra"] = true
		m["tags"].([]any)[0] = "changed"
		m["owner"].(map[string]any)["team"] = "changed"

		again, _ := src.Load()
		m = again[0].Metadata
		if _, ok := m["extra"]; ok {
			t.Errorf("%T: a key added to a returned skill shows in the next load", src)
		}
		if v := m["tags"].([]any)[0]; v != "x" {
			t.Errorf("%T: tags[0] = %v after editing a returned skill, want x", src, v)
		}
		if v := m["owner"].(map[string]any)["team"]; v != "t" {
			t.Errorf("%T: owner.team = %v after editing a returned skill, want t", src, v)
		}
	}
}
