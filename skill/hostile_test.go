package skill

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseHostileFrontMatter: a SKILL.md from a third party may be
// built to cost its reader; each is refused with a reason, and cheaply
// (the alias bomb would hold 9^9 values, the nesting would recurse
// tens of thousands deep).
func TestParseHostileFrontMatter(t *testing.T) {
	var bomb strings.Builder // "billion laughs": each level nine of the one before
	bomb.WriteString("---\nname: x\ndescription: y\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for c := 'b'; c <= 'i'; c++ {
		fmt.Fprintf(&bomb, "%c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat("*"+string(c-1)+", ", 9), ", "))
	}
	bomb.WriteString("---\n# Body\n")
	for _, c := range []struct{ what, doc, want string }{
		{"an alias bomb nine levels deep", bomb.String(), "aliases make"},
		{"lists nested 30000 deep", "---\nname: x\ndescription: y\nz: " + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + "\n---\n", "line 4: exceeded max depth"},
		{"mappings nested 12000 deep", "---\nname: x\ndescription: y\nz: " + strings.Repeat("{a: ", 12000) + "1" + strings.Repeat("}", 12000) + "\n---\n", "line 4: exceeded max depth"},
		{"no end marker", "---\nname: x\ndescription: y\n" + strings.Repeat("body\n", 200000), "not closed"},
		{"a NUL byte", "---\nname: x\x00\ndescription: y\n---\n", "line 2: control character U+0000"},
		{"binary garbage", "---\nname: x\ndescription: y\n---\n\x89PNG\r\n\x1a\n\x00\xff\xfe", "not UTF-8: an invalid byte on line 5"},
		{"invalid UTF-8 in the name", "---\nname: caf\xe9\ndescription: y\n---\n", "not UTF-8: an invalid byte on line 2"},
		{"a name of a megabyte", "---\nname: " + strings.Repeat("n", 1<<20) + "\ndescription: y\n---\n", "over the limit of 65536"},
	} {
		if s, err := Parse([]byte(c.doc), "/d"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q, %v; want an error with %q", c.what, s.Name, err, c.want)
		}
	}
}

// TestLoaderFileSwappedWhileRead: a SKILL.md replaced (renamed over) or
// deleted between the loader's open and its read is read whole from the
// file it opened, and the next load sees what is there now; the skills
// beside it are untouched.
func TestLoaderFileSwappedWhileRead(t *testing.T) {
	defer func(h func(string)) { beforeRead = h }(beforeRead)
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "a"), skillDoc("a", "d", "# A"))
	swapped := writeSkill(t, filepath.Join(root, "b"), skillDoc("b", "first", "# B1"))
	deleted := writeSkill(t, filepath.Join(root, "c"), skillDoc("c", "d", "# C"))
	beforeRead = func(p string) {
		switch p {
		case swapped:
			next := filepath.Join(root, "b", "next")
			if err := os.WriteFile(next, []byte(skillDoc("b", "second, and longer", "# B2")), 0o644); err != nil {
				t.Error(err)
			}
			if err := os.Rename(next, swapped); err != nil {
				t.Error(err)
			}
		case deleted:
			if err := os.Remove(deleted); err != nil {
				t.Error(err)
			}
		}
	}
	l := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)})
	skills, warns := l.Load()
	if got := fmt.Sprint(names(skills), len(warns)); got != "[a b c] 0" || skills[1].Markdown != "# B1" || skills[2].Markdown != "# C" {
		t.Fatalf("the load under way: %s %v, want a, b as it was and c, whole", got, warns)
	}
	beforeRead = nil
	skills, warns = l.Load()
	if got := fmt.Sprint(names(skills), len(warns)); got != "[a b] 0" || skills[1].Markdown != "# B2" {
		t.Fatalf("the next load: %s %v, want a and the new b", got, warns)
	}
}
