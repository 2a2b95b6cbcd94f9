package skill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkillFileLinkSwappedInAfterCheck: ReadFile looked at each name of
// the path for a link, then opened the path through the skill's root,
// which follows a link that stays inside. A directory swapped for a link
// to a hidden one in between (by whoever may write the skills) had the
// hidden file served. The open now follows no link at any name of the
// path.
func TestSkillFileLinkSwappedInAfterCheck(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, skillDoc("pdf", "d", "pdf"))
	for p, content := range map[string]string{"refs/a.txt": "public\n", ".private/a.txt": "hidden\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Skill{Name: "pdf", Dir: dir}
	if r, err := s.ReadFile("refs/a.txt"); err != nil || r.Text != "public\n" {
		t.Fatalf("refs/a.txt: %+v, %v", r, err)
	}
	defer func() { beforeFileOpen = nil }()
	beforeFileOpen = func() {
		beforeFileOpen = nil
		if err := os.Rename(filepath.Join(dir, "refs"), filepath.Join(dir, "refs.old")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(".private", filepath.Join(dir, "refs")); err != nil {
			t.Error(err)
		}
	}
	r, err := s.ReadFile("refs/a.txt")
	if err == nil || strings.Contains(r.Text, "hidden") {
		t.Fatalf("a link swapped in was followed: %+v, %v", r, err)
	}
	if !strings.Contains(err.Error(), "link") {
		t.Errorf("error %q does not say a link is on the way", err)
	}
}
