package skill

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanDepthBounded: a scan opens each directory by its path from the
// loader's directory, one component at a time, so a chain of nested
// directories cost the square of its depth: 9990 of them (within the
// 10000 entries a scan looks at) took four and a half minutes, on every
// query. The scan descends MaxScanDepth directories at most, and says so.
func TestScanDepthBounded(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, skillDoc("root", "The root skill.", "# Root"))
	deep := dir
	for i := 1; i <= MaxScanDepth+3; i++ {
		deep = filepath.Join(deep, "d")
		switch i {
		case MaxScanDepth:
			writeSkill(t, deep, skillDoc("deepest", "As deep as a scan goes.", "# Deepest"))
		case MaxScanDepth + 1:
			writeSkill(t, deep, skillDoc("too_deep", "Below the scan.", "# Too deep"))
		}
	}
	writeSkill(t, deep, skillDoc("bottom", "At the bottom.", "# Bottom"))
	skills, warns := NewLoader(dir, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).Load()
	if got := strings.Join(names(skills), ","); got != "root,deepest" {
		t.Errorf("skills %s, want root,deepest", got)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Reason, "deep") {
		t.Errorf("warnings %v, want one saying the scan stopped descending", warns)
	}
}
