package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEverydayAmpRedirectInside: "&>" sends both outputs to a file in
// bash, and in dash runs the command in the background before a ">"
// alone that makes the file: either way the file is inside, so the
// rule for the command allows the line, as it allows "> f 2>&1". The
// dash reading's ">" runs where the line's cds before "&" did not lead.
func TestEverydayAmpRedirectInside(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "go test", "make", "cd", "npm test")
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: rules, WorkingDirs: dirs}
		for _, line := range []string{
			"go test ./... &> test.log",
			"make &>build.log",
			"make &>> build.log",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%q (dirs %q): %s (%s), want allow", line, dirs, d.Behavior, d.Reason)
			}
		}
		for _, line := range []string{
			"go test ./... &> ../test.log",
			"cd sub && npm test &> ../test.log", // dash: "cd sub && npm test &" in the background, "> ../test.log" here
			"go test ./... &> /srv/test.log",
			"go test ./... &> $OUT",
			"> test.log",
			"ls &> test.log",
			"go test ./... &> test.log rm -rf x",
			"go test ./... &>test.log touch x",
			"make &> x; > y",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior == Allow {
				t.Errorf("%q (dirs %q): %s (%s), want no allow", line, dirs, d.Behavior, d.Reason)
			}
		}
	}
}
