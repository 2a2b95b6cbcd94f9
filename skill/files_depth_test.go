package skill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadFileNoDeeperThanListed: ReadFile serves the files Files lists,
// which are at most MaxFileDepth directories deep. It served any depth,
// looking at every directory on the way by its path from the skill's, a
// component at a time: a skill with 2000 nested directories made one
// request cost 9 seconds (the square of the depth), while its worker
// answered no other.
func TestReadFileNoDeeperThanListed(t *testing.T) {
	dir := t.TempDir()
	listed := strings.Repeat("d/", MaxFileDepth) + "f.txt"
	deeper := strings.Repeat("d/", MaxFileDepth+1) + "f.txt"
	for _, name := range []string{listed, deeper} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Skill{Name: "s", Dir: dir}
	files, _, err := s.Files()
	if err != nil || !slices.Equal(files, []string{listed}) {
		t.Fatalf("Files: %q %v, want [%q]", files, err, listed)
	}
	if r, err := s.ReadFile(listed); err != nil || r.Text != listed {
		t.Errorf("ReadFile(%q) = %+v, %v", listed, r, err)
	}
	if r, err := s.ReadFile(deeper); err == nil || !strings.Contains(err.Error(), "has no file") {
		t.Errorf("ReadFile(%q) = %+v, %v; want no such file", deeper, r, err)
	}
}
