package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWritesAfterCdDotDotLogical: the shell's cd takes ".." as written
// (cd -L, its default), so after "cd link" to a link to sub/deep, "cd
// .." (and "cd link/..") leads back to the working directory, not to
// sub, where the kernel's ".." leads; a command joined by && to it was
// checked in sub alone, and "cd link/.. && ls > ../f" wrote the working
// directory's parent unasked. Both places are checked now.
func TestWritesAfterCdDotDotLogical(t *testing.T) {
	wd := filepath.Join(t.TempDir(), "wd")
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/deep", filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "cd", "make", "ls", "rm", "touch"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd link/.. && ls > ../f",
		"cd link && cd .. && ls > ../f",
		"cd link && make && cd .. && rm -rf ../x",
		"cd link && cd ../.. && touch f",
		"cd link/../.. && touch f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"cd link && cd .. && ls > f",
		"cd link && ls > ../f", // sub/f: the kernel's ".." after a link
		"cd sub && make && cd .. && ls > f",
		"cd sub/deep && cd ../.. && ls > f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
