package skill

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestScanManyFilesCostsOthersNothing: a skill folder holding more files
// than a scan looks at (a bundled node_modules, or a hostile folder)
// spent the scan's entries on its own listing, in the order the file
// system lists them: its own skill, and every skill after it in lexical
// order, were not loaded, and the warning named the skills directory
// only. The scan goes level by level, each directory's SKILL.md looked
// for before any directory below is read, so the skills beside and
// before such a folder and its own load; the warning names the folder
// where the scan stopped.
func TestScanManyFilesCostsOthersNothing(t *testing.T) {
	defer func(n int) { maxScan = n }(maxScan)
	maxScan = 100
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "a"), skillDoc("a", "d", "# A"))
	many := filepath.Join(root, "many")
	writeSkill(t, many, skillDoc("many", "d", "# Many"))
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(many, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSkill(t, filepath.Join(root, "z"), skillDoc("z", "d", "# Z"))
	skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).Load()
	if got := strings.Join(names(skills), ","); got != "a,many,z" {
		t.Errorf("skills %s, want a,many,z", got)
	}
	if len(warns) != 1 || warns[0].Path != root || !strings.Contains(warns[0].Reason, "100 entries") || !strings.Contains(warns[0].Reason, many) {
		t.Errorf("warnings %v, want one on the directory naming %s", warns, many)
	}
}

// TestScanOrder: skills are loaded in filepath.WalkDir's order (root
// first, then by the names on the way: a/B before a/SKILL.md before
// a/b), whatever order the scan reads the tree in: a later skill of a
// name replaces an earlier one.
func TestScanOrder(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{".", "a-x", "a/b", "a", "A", "a/B/c"} {
		writeSkill(t, filepath.Join(root, dir), skillDoc(strings.NewReplacer("/", "_", ".", "root").Replace(dir), "d", "#"))
	}
	skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).Load()
	if got := strings.Join(names(skills), ","); got != "root,A,a_B_c,a,a_b,a-x" || len(warns) != 0 {
		t.Errorf("skills %s, warnings %v; want root,A,a_B_c,a,a_b,a-x", got, warns)
	}
}
