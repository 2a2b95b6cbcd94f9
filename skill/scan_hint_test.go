package skill

import (
	"path/filepath"
	"strings"
	"testing"
)

// A directory without a SKILL.md of its own whose sub-directories hold
// skills, loaded without ScanSubdirs (scan_subdirs: true forgotten), is
// warned of, once, saying to scan it; it loaded nothing and said nothing.
func TestLoaderHintsScanSubdirs(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, filepath.Join(dir, "pdf"), skillDoc("pdf", "PDF.", "body"))
	log, buf := newLogger(t)
	l := NewLoader(dir, &LoaderOptions{Logger: log})
	for range 2 {
		skills, warns := l.Load()
		if len(skills) != 0 || len(warns) != 1 || warns[0].Path != dir || !strings.Contains(warns[0].Reason, "scan_subdirs: true") {
			t.Fatalf("skills %v, warnings %v: want one warning saying scan_subdirs", skills, warns)
		}
	}
	if n := strings.Count(buf.String(), "scan_subdirs"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, buf.String())
	}
	if skills, warns := NewLoader(dir, &LoaderOptions{ScanSubdirs: true}).Load(); len(skills) != 1 || len(warns) != 0 {
		t.Fatalf("scanned: skills %v, warnings %v", skills, warns)
	}
	if skills, warns := NewLoader(t.TempDir(), nil).Load(); len(skills) != 0 || len(warns) != 0 {
		t.Fatalf("an empty directory: skills %v, warnings %v: want none", skills, warns)
	}
}
