package skill

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/ostest"
)

// TestSkillFilesStayInTheDirectory: a skill's files are its directory's
// regular files, without hidden ones, links out of it, odd file types or
// oversized files; reading one refuses every way out.
func TestSkillFilesStayInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("SKILL.md", []byte("---\nname: s\ndescription: d\n---\n# S"))
	write("reference.md", []byte("# Reference"))
	write("scripts/run.py", []byte("print('hi')\n"))
	write("logo.png", []byte{0x89, 'P', 'N', 'G', 0xff, 0xfe})
	write(".env", []byte("TOKEN=x"))
	write(".git/config", []byte("[core]"))
	write("big.txt", bytes.Repeat([]byte("x"), MaxFileBytes+1))
	write("a/b/c/d/e/f/g/deep.txt", []byte("deep"))
	if err := os.Symlink(outside, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := ostest.Mkfifo(t, filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Links that stay inside but name hidden files.
	if err := os.Symlink(".env", filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(dir, "g")); err != nil {
		t.Fatal(err)
	}
	s := Skill{Name: "s", Dir: dir}
	files, truncated, err := s.Files()
	if err != nil || truncated {
		t.Fatalf("Files: %v %v", truncated, err)
	}
	if want := []string{"logo.png", "reference.md", "scripts/run.py"}; !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}

	r, err := s.ReadFile("scripts/run.py")
	if err != nil || r.Text != "print('hi')\n" || r.MIMEType == "" {
		t.Errorf("run.py: %+v %v", r, err)
	}
	if r, err := s.ReadFile("reference.md"); err != nil || r.MIMEType != "text/markdown" {
		t.Errorf("reference.md: %+v %v", r, err)
	}
	if r, err := s.ReadFile("logo.png"); err != nil || r.Text != "" || r.Blob != "iVBOR//+" || r.MIMEType != "image/png" {
		t.Errorf("logo.png: %+v %v", r, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, bad := range []string{"../secret.txt", "/etc/passwd", "link.txt", "notes.txt", "g/config", ".env", ".git/config", "big.txt", "pipe", "nope.txt", "scripts", "", ".", "scripts/../../x"} {
			if r, err := s.ReadFile(bad); err == nil {
				t.Errorf("ReadFile(%q) = %+v, want an error", bad, r)
			} else if strings.Contains(err.Error(), "outside") {
				t.Errorf("ReadFile(%q): %v", bad, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("reading a FIFO hung")
	}
	if files, _, err := (Skill{Name: "static"}).Files(); err != nil || files != nil {
		t.Errorf("a skill without a directory: %q %v", files, err)
	}
}

// TestSkillFilesAreBounded: the listing stops at MaxFiles.
func TestSkillFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxFiles + 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, truncated, err := Skill{Name: "many", Dir: dir}.Files()
	if err != nil || len(files) != MaxFiles || !truncated {
		t.Errorf("%d files, truncated %v, %v", len(files), truncated, err)
	}
}

// TestSkillFilesLookAtFewEntries: listing a skill with a huge directory
// (a data set bundled with it) costs what the entries it may look at
// cost, not the whole directory: it was read in full before the first
// entry counted (200,000 files: 100 MB and 1.4 s for each listing).
func TestSkillFilesLookAtFewEntries(t *testing.T) {
	defer func(n int) { maxWalk = n }(maxWalk)
	maxWalk = 100
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if err := os.WriteFile(filepath.Join(dir, "data", fmt.Sprintf("row-%05d-of-a-bundled-data-set.csv", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	files, truncated, err := Skill{Name: "data", Dir: dir}.Files()
	runtime.ReadMemStats(&after)
	if err != nil || !truncated || len(files) == 0 || len(files) > maxWalk {
		t.Errorf("%d files, truncated %v, %v; want fewer than %d, truncated", len(files), truncated, err, maxWalk)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 768<<10 {
		t.Errorf("listing looked at %d entries and allocated %d bytes, for a directory of 3000", maxWalk, n)
	}
}

// TestSkillFilesFromTheLoadedDirectory: a loaded skill's files are read
// from the directory it was loaded from. A skill's folder (or the skills
// directory itself) swapped after the load for a link out of it, or for
// another directory, is refused, not read through.
func TestSkillFilesFromTheLoadedDirectory(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "ref.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		swap string // the folder swapped, relative to the parent of the skills directory
		link bool   // a link to outside; otherwise another directory
	}{
		{"sub-skill folder to a link", "skills/pdf", true},
		{"sub-skill folder to another directory", "skills/pdf", false},
		{"skills directory to a link", "skills", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "skills")
			writeSkill(t, root, skillDoc("top", "d", "top"))
			writeSkill(t, filepath.Join(root, "pdf"), skillDoc("pdf", "d", "pdf"))
			for _, d := range []string{root, filepath.Join(root, "pdf")} {
				if err := os.WriteFile(filepath.Join(d, "ref.txt"), []byte("public"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: true}).Load()
			if len(skills) != 2 || len(warns) != 0 {
				t.Fatalf("skills %v, warnings %v", names(skills), warns)
			}
			for _, s := range skills {
				if r, err := s.ReadFile("ref.txt"); err != nil || r.Text != "public" {
					t.Fatalf("%s before the swap: %+v %v", s.Name, r, err)
				}
			}
			swapped := filepath.Join(parent, tt.swap)
			if err := os.Rename(swapped, swapped+".old"); err != nil {
				t.Fatal(err)
			}
			if tt.link {
				if err := os.Symlink(outside, swapped); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Mkdir(swapped, 0o755); err != nil {
				t.Fatal(err)
			} else if err := os.WriteFile(filepath.Join(swapped, "ref.txt"), []byte("secret"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, s := range skills {
				if !strings.HasPrefix(s.Dir, swapped) {
					continue
				}
				if r, err := s.ReadFile("ref.txt"); err == nil || !strings.Contains(err.Error(), "replaced since") {
					t.Errorf("%s: ReadFile after the swap = %+v, %v; want it refused", s.Name, r, err)
				}
				if files, _, err := s.Files(); err == nil || !strings.Contains(err.Error(), "replaced since") {
					t.Errorf("%s: Files after the swap = %q, %v; want it refused", s.Name, files, err)
				}
			}
		})
	}
}

// TestSkillFilesListsWhatReads: every file Files lists reads with
// ReadFile. A name that is not UTF-8 (a file from an archive of another
// encoding) was listed, and then not found by ReadFile, which takes
// fs.ValidPath names only; the MCP gateway offered it as a resource that
// could not be read, its name mangled by JSON.
func TestSkillFilesListsWhatReads(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"caf\xe9.txt", "d\xff/inner.txt", "ok.txt", "new\nline.txt"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Skill{Name: "s", Dir: dir}
	files, truncated, err := s.Files()
	if err != nil || truncated {
		t.Fatalf("Files: %v %v", truncated, err)
	}
	if want := []string{"new\nline.txt", "ok.txt"}; !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	for _, f := range files {
		if r, err := s.ReadFile(f); err != nil || r.Text != "x" {
			t.Errorf("ReadFile(%q) of a listed file: %+v %v", f, r, err)
		}
	}
}
