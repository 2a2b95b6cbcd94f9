package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUvOtherProjectAfterCd: uv finds its project in the current
// directory, as cargo and npm do, yet "uv:*" allowed "cd /srv/other &&
// uv run pytest" (uv sync, uv build, uv run python x.py), which sync and
// build that project's environment and run its code, "cd /srv/other &&
// uv tool run --from . tool", which builds it, and "uvx --directory
// /srv/other tool", which runs the tool there, where "cd /srv/other &&
// cargo build" asks. They ask now, with no rule suggested; inside they
// stay uv's.
func TestUvOtherProjectAfterCd(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rules := range [][]Rule{shellAllowRules(t, "uv", "uvx", "cd", "pytest", "ruff", "python"), shellAllowRules(t, "uv run", "uv sync", "uv build", "uv tool", "uvx", "cd", "pytest", "ruff", "python")} {
		for _, dirs := range [][]string{{wd}, nil} {
			p := Policy{Rules: rules, WorkingDirs: dirs}
			for _, line := range []string{
				"cd /srv/other && uv run pytest",
				"cd /srv/other; uv sync",
				"cd /srv/other && uv run python x.py",
				"cd ../other && uv build",
				"cd $X && uv sync",
				"cd /srv/other && uv -q run pytest",
				"cd /srv/other && uv tool run --from . ruff",
				"uv tool run --from /srv/other ruff",
				"uvx --from=/srv/other ruff",
				"uvx --directory /srv/other ruff",
				"uvx --directory=/srv/other ruff check",
			} {
				if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
					t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
				}
				if d := Decide(Policy{WorkingDirs: dirs}, shell, cmd(line)); len(d.Suggested) > 0 {
					t.Errorf("%v %q: suggests %v, want none", dirs, line, d.Suggested)
				}
			}
			for _, line := range []string{
				"uv run pytest",
				"uv sync",
				"uv build",
				"cd sub && uv run pytest",
				"uv tool run --from . ruff",
				"uvx --from ./sub ruff",
				"uvx --directory sub ruff",
				"uvx ruff check",
				"uvx --from ruff==0.5 ruff check",
				"uv sync && cd /srv/other",
			} {
				if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
					t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
				}
			}
		}
	}
}
