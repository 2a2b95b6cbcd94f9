package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUvEnvironmentOptions: uv reads its global options from variables
// too, yet "UV_PROJECT=/srv/other uv run pytest" (which runs that
// project's code), "UV_WORKING_DIR=/srv/other uv run rm -rf x" (which
// runs rm there), "UV_CACHE_DIR=/srv/c uv pip install foo" (which
// writes its cache there) and "UV_PROJECT_ENVIRONMENT=/srv/venv uv
// sync" (which makes and changes that environment) were allowed by the
// rules suggested for them, naming the assignment ("UV_PROJECT=/srv/other
// uv run:*"), where the same options on the line (--project,
// --directory, --cache-dir) ask with no rule suggested. The variables
// set before uv are now read as those options; inside they stay the
// rules'.
func TestUvEnvironmentOptions(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	named := func(line string) Policy { // rules naming the line's assignments
		f := strings.Fields(line)
		i := 0
		for assignWordRE.MatchString(f[i]) {
			i++
		}
		return Policy{Rules: shellAllowRules(t, "uv", "uvx", "pytest", "ruff", "rm", strings.Join(f[:i+1], " ")), WorkingDirs: []string{wd}}
	}
	for _, line := range []string{
		"UV_PROJECT=sub uv run pytest",
		"UV_WORKING_DIR=sub uv sync",
		"UV_CACHE_DIR=.cache/uv uv pip install foo",
		"UV_PROJECT_ENVIRONMENT=.venv-3.12 uv sync",
		"UV_WORKING_DIR=sub uv run rm -rf x",
		"UV_NO_CACHE=1 UV_FROZEN=1 uv sync",
		"UV_PROJECT_ENVIRONMENT=/srv/venv uvx ruff check",
	} {
		if d := Decide(named(line), shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"UV_PROJECT=/srv/other uv run pytest",
		"UV_PROJECT=/srv/other uv sync",
		"UV_WORKING_DIR=/srv/other uv run pytest",
		"UV_WORKING_DIR=/srv/other uv pip install --target vendor foo",
		"UV_WORKING_DIR=/srv/other uvx ruff check",
		"UV_WORKING_DIR=/srv/other uv run rm -rf x",
		"UV_CACHE_DIR=/srv/c uv pip install foo",
		"UV_CACHE_DIR=/srv/c uvx ruff check",
		"UV_PROJECT_ENVIRONMENT=/srv/venv uv sync",
		"UV_PROJECT_ENVIRONMENT=../venv uv run pytest",
		"UV_FROZEN=1 UV_PROJECT=/srv/other uv run pytest",
	} {
		if d := Decide(named(line), shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
		if d := Decide(Policy{WorkingDirs: []string{wd}}, shell, cmd(line)); len(d.Suggested) > 0 {
			t.Errorf("%q: suggests %v, want none", line, d.Suggested)
		}
	}
}
