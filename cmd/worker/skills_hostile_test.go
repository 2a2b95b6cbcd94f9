package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/skill"
)

// TestSkillsHostileDirectory: a skills directory holding third parties'
// skills built to cost the worker (an alias bomb, a FIFO, a link to
// /etc/passwd, a sparse SKILL.md of 100 MB, a front matter with no end,
// a skill folder of more files than a scan looks at, before the good
// skill in lexical order): the worker starts, logs each bad SKILL.md by
// its path, and serves the good skill through its Skill tool and its
// skill requests, which refuse paths out of the skill with a reason.
func TestSkillsHostileDirectory(t *testing.T) {
	root := t.TempDir()
	skills := filepath.Join(root, "skills")
	at := func(dir string) string {
		p := filepath.Join(skills, dir, skill.FileName)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var bomb strings.Builder
	bomb.WriteString("---\nname: bomb\ndescription: laughs\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for c := 'b'; c <= 'i'; c++ {
		fmt.Fprintf(&bomb, "%c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat("*"+string(c-1)+", ", 9), ", "))
	}
	bomb.WriteString("---\n")
	mustWrite(t, at("bomb"), bomb.String())
	mustWrite(t, at("open"), "---\nname: open\ndescription: never closed\n"+strings.Repeat("x\n", 1000))
	if err := ostest.Mkfifo(t, at("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", at("passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("huge"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(at("huge"), 100<<20); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, at("many"), "---\nname: many\ndescription: Many files.\n---\n# Many\n")
	for i := range 10001 { // past the 10000 entries a scan looks at
		if err := os.WriteFile(filepath.Join(skills, "many", fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, at("pdf"), "---\nname: pdf\ndescription: Fill PDF forms.\n---\n# PDF\n")
	mustWrite(t, filepath.Join(skills, "pdf", "forms.txt"), "forms")
	cfg := filepath.Join(root, "worker.yaml")
	mustWrite(t, cfg, "skills:\n  - dir: "+skills+"\n    scan_subdirs: true\n")

	w := startWorker(t, "--config", cfg)
	for _, dir := range []string{"bomb", "open", "fifo", "passwd", "huge"} {
		if !strings.Contains(w.stderr.String(), at(dir)) {
			t.Errorf("the worker did not warn about %s:\n%s", at(dir), w.stderr)
		}
	}
	if so, se, code := toolctl(t, w.url, "call", "Skill", `{"skill":"pdf"}`); code != 0 || so != "# PDF\n" {
		t.Errorf("call Skill pdf: exit %d, %q, %s", code, so, se)
	}
	if so, se, code := toolctl(t, w.url, "call", "Skill", `{"skill":"many"}`); code != 0 || so != "# Many\n" {
		t.Errorf("call Skill many: exit %d, %q, %s", code, so, se)
	}
	nc := natstest.URLConn(t, w.url)
	if r, err := skill.FetchFile(natstest.Ctx(t), nc, []string{w.instance}, "pdf", "basic", "forms.txt"); err != nil || r.Text != "forms" {
		t.Errorf("forms.txt: %+v, %v", r, err)
	}
	for _, bad := range []string{"../bomb/SKILL.md", "/etc/passwd", "../fifo/SKILL.md"} {
		if r, err := skill.FetchFile(natstest.Ctx(t), nc, []string{w.instance}, "pdf", "basic", bad); err == nil || !strings.Contains(err.Error(), `skill "pdf" has no file`) {
			t.Errorf("%s: %+v, %v; want it refused", bad, r, err)
		}
	}
	if code := w.stop(t); code != 0 {
		t.Errorf("the worker exited %d:\n%s", code, w.stderr)
	}
}
