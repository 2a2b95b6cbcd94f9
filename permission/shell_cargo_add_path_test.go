package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCargoAddPathOtherProject: "cargo add --path /srv/other" makes the
// project outside the working directories a dependency of the
// workspace's, whose build script and procedural macros every later
// cargo build then runs with no word of that directory on its line, yet
// "cargo:*" allowed it, where "cargo install --path /srv/other", which
// runs them once, asks. add's --path directory is now a project
// directory, as install's is; a crate of the workspace stays cargo's.
func TestCargoAddPathOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "crates", "util"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, rules := range [][]Rule{shellAllowRules(t, "cargo"), shellAllowRules(t, "cargo add")} {
		p := Policy{Rules: rules, WorkingDirs: []string{wd}}
		checkLines(t, p, []string{
			"cargo add --path crates/util",
			"cargo add util --path=crates/util --features x",
			"cargo add serde --features derive",
		}, []string{
			"cargo add --path " + other,
			"cargo add --path=" + other,
			"cargo add foo --path " + other + "/foo",
			"cargo add --path ../other",
		})
	}
}
