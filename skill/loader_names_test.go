package skill

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// A skill's directory is given to the model (the prompt's <dir>) and to
// the fleet (the announcement's dir, a msgpack str) as text: a skill in
// a directory whose name is not UTF-8 is skipped with a warning, as a
// SKILL.md that is not UTF-8 is, and the skills beside it load; a
// loader's directory whose path is not UTF-8 is one warning.
func TestLoaderSkipsDirectoriesNotUTF8(t *testing.T) {
	root := t.TempDir()
	bad := filepath.Join(root, "caf\xe9")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Skip("this file system takes no names that are not UTF-8:", err)
	}
	writeSkill(t, bad, skillDoc("cafe", "d", "body"))
	writeSkill(t, filepath.Join(root, "good"), skillDoc("good", "d", "body"))
	writeSkill(t, filepath.Join(bad, "below"), skillDoc("below", "d", "body"))
	quiet := &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}

	skills, warns := NewLoader(root, quiet).Load()
	if len(skills) != 1 || skills[0].Name != "good" {
		t.Errorf("skills %v, want good alone", skills)
	}
	for _, sk := range skills {
		if !utf8.ValidString(sk.Dir) {
			t.Errorf("skill %s loaded from %q", sk.Name, sk.Dir)
		}
	}
	want := map[string]bool{filepath.Join(bad, FileName): true, filepath.Join(bad, "below", FileName): true}
	for _, w := range warns {
		if !want[w.Path] || !strings.Contains(w.Reason, "not UTF-8") || !strings.Contains(w.Reason, "rename") {
			t.Errorf("warning %q", w)
		}
		delete(want, w.Path)
	}
	if len(want) > 0 {
		t.Errorf("no warning for %v", want)
	}

	skills, warns = NewLoader(bad, quiet).Load()
	if len(skills) != 0 || len(warns) != 1 || warns[0].Path != bad || !strings.Contains(warns[0].Reason, "not UTF-8") {
		t.Errorf("a loader of %q: skills %v, warnings %q; want one warning on the directory", bad, skills, warns)
	}
}

// A directory named SKILL.md where a skill's file is expected (mkdir -p
// skills/pdf/SKILL.md) is warned of below the loader's directory as at
// its root, rather than scanned as one more directory in silence.
func TestLoaderWarnsOfSkillFileThatIsADirectory(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{filepath.Join(root, FileName), filepath.Join(root, "pdf", FileName)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeSkill(t, filepath.Join(root, "good"), skillDoc("good", "d", "body"))
	skills, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}).Load()
	if len(skills) != 1 || skills[0].Name != "good" {
		t.Errorf("skills %v, want good alone", skills)
	}
	want := map[string]bool{filepath.Join(root, FileName): true, filepath.Join(root, "pdf", FileName): true}
	for _, w := range warns {
		if !want[w.Path] || w.Reason != "is a directory, not a file" {
			t.Errorf("warning %q", w)
		}
		delete(want, w.Path)
	}
	if len(want) > 0 {
		t.Errorf("no warning for %v", want)
	}
}
