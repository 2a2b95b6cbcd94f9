package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUvInstallOtherProject: "uv pip install /srv/other" (-e too), "uv
// tool install /srv/other", "uv run --with-editable /srv/other pytest"
// and "uv add /srv/other" build the project outside the working
// directories, running its build backend and build scripts, and install
// it where the workspace's code (and each later uv run) imports it, yet
// "uv:*" allowed them, where "cargo add --path /srv/other" asks. A path
// they build a package of is now a project directory, as cargo add's
// --path is; a requirement by name, a requirements file and a path
// inside stay uv's.
func TestUvInstallOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, rules := range [][]Rule{shellAllowRules(t, "uv", "uvx", "pytest", "ruff", "cd"),
		shellAllowRules(t, "uv pip install", "uv tool install", "uv run", "uv add", "uvx", "pytest", "ruff", "cd")} {
		for _, dirs := range [][]string{{wd}, nil} {
			p := Policy{Rules: rules, WorkingDirs: dirs}
			checkLines(t, p, []string{
				"uv pip install foo",
				"uv pip install -r requirements.txt",
				"uv pip install -r requirements.txt -c constraints.txt",
				"uv pip install -e .",
				"uv pip install -e ./sub",
				"uv pip install ./sub",
				"uv pip install 'foo @ git+https://example.com/foo'",
				"uv pip install --python-version 3.12 foo",
				"uv tool install ruff",
				"uv tool install ruff@0.5.0",
				"uv tool install --with ruff-lsp ruff",
				"uv tool install -e .",
				"uv run --with-editable ./sub pytest",
				"uv run --with requests,./sub pytest",
				"uv add requests",
				"uv add --editable ./sub",
				"uv add --dev pytest",
				"uvx --with-editable ./sub ruff",
				"cd sub && uv pip install -e .",
			}, []string{
				"uv pip install " + other,
				"uv pip install -e " + other,
				"uv pip install --editable=" + other,
				"uv pip install -e ../other",
				"uv pip install ~/other",
				"uv pip install 'foo @ file://" + other + "'",
				"uv -q pip install foo " + other,
				"uv pip install -r requirements.txt " + other,
				"uv tool install " + other,
				"uv tool install -e " + other,
				"uv tool install --from " + other + " tool",
				"uv tool install --with-editable " + other + " ruff",
				"uv run --with-editable " + other + " pytest",
				"uv run --with " + other + " pytest",
				"uv run --with requests," + other + " pytest",
				"uv add " + other,
				"uv add --editable " + other,
				"uv add foo ../other",
				"uvx --with-editable " + other + " ruff",
				"uv --directory sub pip install -e ../..",
				"cd sub && uv add ../..",
			})
			// No rule but "*" allows it: only a one-shot approval fits.
			for _, line := range []string{"uv pip install -e " + other, "uv add " + other, "uv tool install " + other} {
				if d := Decide(Policy{WorkingDirs: dirs}, shell, cmd(line)); len(d.Suggested) > 0 {
					t.Errorf("%v %q: suggests %v, want none", dirs, line, d.Suggested)
				}
			}
		}
	}
}
