package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUvGlobalOptions: uv takes global options before its subcommand
// (and after it), yet "uv:*" allowed "uv --offline pip install --target
// /srv/other foo", "uv -q pip compile -o /srv/other/r.txt r.in", "uv
// --directory /srv/other run pytest" (which runs that project's code),
// "uv --project /srv/other sync" (which syncs that project's
// environment) and "uv --cache-dir /srv/other pip install foo" (which
// writes its cache there), as uv's first word was taken for its
// subcommand. Its global options are now read as uv reads them: the
// subcommand's writes are found past them, under --directory's
// directory for a relative one, --directory's and --project's are
// project directories, as cargo -C's is, and --cache-dir's is a
// directory written; a deny rule on pip install or rm sees "uv -q pip
// install x" and "uv -q run rm -rf x". Inside they stay uv's.
func TestUvGlobalOptions(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "uv", "pytest"), WorkingDirs: dirs}
		checkLines(t, p, []string{
			"uv run pytest",
			"uv -q run pytest",
			"uv --offline sync",
			"uv -q pip install -r requirements.txt",
			"uv --color never pip compile -o requirements.txt r.in",
			"uv --directory sub run pytest",
			"uv --project=sub sync",
			"uv --directory sub pip install --target vendor foo",
			"uv --cache-dir .cache/uv pip install foo",
			"uv -n --python-preference only-managed sync",
			"uv run pytest --directory " + other,
			"uv run -- pytest --cache-dir " + other,
		}, []string{
			"uv --offline pip install --target " + other + " foo",
			"uv -q pip compile -o " + other + "/r.txt r.in",
			"uv -qq --color never pip compile r.in -o " + other + "/r.txt",
			"uv --directory " + other + " run pytest",
			"uv --directory=" + other + " pip install -r requirements.txt",
			"uv --project " + other + " sync",
			"uv --project=" + other + " run pytest",
			"uv sync --project " + other,
			"uv run --directory " + other + " pytest",
			"uv --cache-dir " + other + " pip install foo",
			"uv --cache-dir=" + other + " sync",
			"uv pip install --cache-dir " + other + " foo",
			"uv --no-cache --allow-insecure-host example.com pip install --system foo",
			"uv --config-file uv.toml -v pip install --prefix " + other + " foo",
			"uv --directory sub pip install --target ../../x foo",
			"uv --directory sub pip compile -o ../../r.txt r.in",
		})
	}
	deny := Policy{Mode: ModeBypass, Rules: []Rule{
		rule(t, "execute_shell_command:pip install:*", Deny),
		rule(t, "execute_shell_command:rm:*", Deny),
	}}
	for _, line := range []string{
		"uv -q pip install requests",
		"uv --offline --color never pip install requests",
		"uv --directory sub pip install requests",
		"uv -q run rm -rf x",
		"uv --project sub run -- rm -rf x",
		"uv --cache-dir c tool run rm -rf x",
	} {
		if d := Decide(deny, shell, cmd(line)); d.Behavior != Deny {
			t.Errorf("%q: %s (%s), want deny", line, d.Behavior, d.Reason)
		}
	}
}
