package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCargoOtherProject: "cd /srv/other && cargo build" and "cargo build
// --manifest-path /srv/other/Cargo.toml" build another project, running
// its build.rs (and its tests' and its binaries' code with cargo test
// and cargo run), yet "cargo:*" allowed them, though "cd /srv/other &&
// make" and "make -C /srv/other" ask. They now ask the same, with no
// rule suggested; inside they stay cargo's.
func TestCargoOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rules := range [][]Rule{shellAllowRules(t, "cargo", "cd", "pushd", "sh"), shellAllowRules(t, "cargo build", "cargo test", "cargo run", "cargo install", "cd")} {
		for _, dirs := range [][]string{{wd}, nil} {
			p := Policy{Rules: rules, WorkingDirs: dirs}
			for _, line := range []string{
				"cd /srv/other && cargo build",
				"cd /srv/other; cargo test",
				"cd ../other && cargo run",
				"cd $X && cargo build",
				"cargo build --manifest-path /srv/other/Cargo.toml",
				"cargo build --manifest-path=/srv/other/Cargo.toml --release",
				"cargo test --manifest-path ../other/Cargo.toml",
				"cargo run --release --manifest-path /srv/other/Cargo.toml -- --help",
				"cargo +nightly build --manifest-path /srv/other/Cargo.toml",
				"cargo -Z unstable-options -C /srv/other build",
				"cargo install --path /srv/other",
			} {
				if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
					t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
				}
				if d := Decide(Policy{WorkingDirs: dirs}, shell, cmd(line)); len(d.Suggested) > 0 {
					t.Errorf("%v %q: suggests %v, want none", dirs, line, d.Suggested)
				}
			}
			for _, line := range []string{
				"cargo build",
				"cargo test -- --nocapture",
				"cd sub && cargo build",
				"cargo build --manifest-path sub/Cargo.toml",
				"cargo build --manifest-path=sub/deep/Cargo.toml",
				"cargo install --path sub",
				"cargo run -- --manifest-path /srv/other/Cargo.toml",
				"cargo build && cd /srv/other",
			} {
				if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
					t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
				}
			}
		}
	}
}
