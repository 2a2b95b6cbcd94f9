package permission

import "testing"

// TestCargoNewWritesItsDirectory: "cargo new /srv/other/x" and "cargo
// init /srv/other/x" make a project there (Cargo.toml, src/, a git
// repository), yet "cargo:*" allowed them, where "mkdir /srv/other/x"
// with "mkdir:*" asks; the directory they make (cargo init's, without
// one, the current directory) is now a file written, outside the
// working directories the line asks. Inside they stay cargo's.
func TestCargoNewWritesItsDirectory(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "cargo", "cargo new", "cargo init", "cd")
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: rules, WorkingDirs: dirs}
		for _, line := range []string{
			"cargo new " + other + "/x",
			"cargo new --lib " + other + "/x",
			"cargo new --name x --vcs none " + other + "/x",
			"cargo new --edition 2021 " + other + "/x",
			"cargo +nightly new " + other + "/x",
			"cargo init " + other,
			"cargo init --bin " + other + "/x",
			"cargo new ../x",
			"cd " + other + " && cargo init",
			"cd " + other + " && cargo new x",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
				t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
			}
		}
		for _, line := range []string{
			"cargo new x",
			"cargo new --lib crates/x",
			"cargo new --name " + other + " x",
			"cargo init",
			"cargo init --lib",
			"cargo --name new",
			"cargo build --bin " + other,
			"cargo test -- " + other,
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
