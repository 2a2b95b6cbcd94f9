package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMakeAndGoTestOtherProject: "make -C /srv/other" runs the recipes
// of another directory's Makefile and "make -f /srv/other/Makefile"
// those of another makefile, as "cd /srv/other && make" does, and "cd
// /srv/other && go test" (or "go -C /srv/other test") runs another
// module's test code; "make:*" and "go test:*" allowed them, though
// "npm test --prefix /srv/other" and "cd /srv/other && npm test" ask.
// They now ask the same, with no rule suggested; inside they stay the
// command's.
func TestMakeAndGoTestOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "make", "gmake", "go test", "go", "cd", "pushd", "sh")
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: rules, WorkingDirs: dirs}
		for _, line := range []string{
			"make -C /srv/other",
			"make -C/srv/other test",
			"make --directory=/srv/other",
			"make --dir /srv/other",
			"make -j4 -C /srv/other build",
			"make -f /srv/other/Makefile",
			"make --file=/srv/other/Makefile test",
			"make --makefile /srv/other/Makefile",
			"make -C sub -f /srv/other/Makefile",
			"make -C ../other",
			"make -C $DIR",
			"gmake -C /srv/other",
			"cd /srv/other && make",
			"cd /srv/other; make test",
			"pushd /srv/other && make",
			"sh -c 'cd /srv/other && make'",
			"cd /srv/other && go test ./...",
			"cd /srv/other && go test",
			"go -C /srv/other test ./...",
			"cd $X && go test ./...",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
				t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
			}
			if d := Decide(Policy{WorkingDirs: dirs}, shell, cmd(line)); len(d.Suggested) > 0 {
				t.Errorf("%v %q: suggests %v, want none", dirs, line, d.Suggested)
			}
		}
		for _, line := range []string{
			"make",
			"make -C sub",
			"make -C sub/deep test",
			"make -f Makefile.local",
			"make -C sub -f Makefile.sub",
			"cd sub && make",
			"go test ./...",
			"cd sub && go test ./...",
			"go -C sub test ./...",
			"make && cd /srv/other",
			"go build ./... && cd /srv/other",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
