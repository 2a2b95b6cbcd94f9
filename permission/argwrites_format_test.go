package permission

import "testing"

// TestFormatterFixWrites: prettier --write (-w), black (unless --check
// or --diff), ruff check --fix and ruff format, isort (unless
// --check-only or --diff) and eslint --fix rewrite the files and
// directories they are given, and ruff's and eslint's --output-file is
// a file they write, but none was a file written, so "prettier:*"
// allowed "prettier --write /srv/other/x.js" (and the others theirs),
// writes outside the working directories that a redirection there asks
// for; they now ask the same, as gofmt -w does. Inside, and where the
// tools only read, they stay the command's.
func TestFormatterFixWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "prettier", "black", "ruff", "isort", "eslint", "npx", "cd")
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: rules, WorkingDirs: dirs}
		for _, line := range []string{
			"prettier --write " + other + "/x.js",
			"prettier -w " + other,
			"prettier --write --print-width 100 src " + other,
			"prettier --check . --cache-location " + other + "/cache",
			"npx prettier --write " + other,
			"black " + other + "/x.py",
			"black -l 100 " + other,
			"black --line-length=100 -t py311 . " + other + "/x.py",
			"cd " + other + " && black .",
			"ruff check --fix " + other,
			"ruff check " + other + " --fix",
			"ruff check --fix-only " + other,
			"ruff check --add-noqa " + other,
			"ruff check -o " + other + "/report.txt .",
			"ruff check --output-file=" + other + "/report.txt .",
			"ruff format " + other,
			"ruff format --line-length 100 " + other + "/x.py",
			"cd " + other + " && ruff format",
			"isort " + other + "/x.py",
			"isort --profile black " + other,
			"eslint --fix " + other,
			"eslint --fix --ext .ts " + other + "/src",
			"eslint -o " + other + "/report.json .",
			"cd " + other + " && eslint --fix",
			"npx eslint@8 --fix " + other,
		} {
			d := Decide(p, shell, cmd(line))
			if d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
			if len(d.Suggested) > 0 {
				t.Errorf("%v %q: suggested %v, want none", dirs, line, d.Suggested)
			}
		}
		for _, line := range []string{
			"prettier --write src/",
			"prettier -w .",
			"prettier --check " + other,
			"prettier " + other + "/x.js",
			"prettier --config " + other + "/.prettierrc --write src",
			"black .",
			"black --check " + other,
			"black --diff " + other + "/x.py",
			"black -c 'x=1'",
			"ruff check .",
			"ruff check " + other,
			"ruff check --fix .",
			"ruff check --fix --diff " + other,
			"ruff format --check " + other,
			"ruff format --diff " + other,
			"ruff format",
			"isort .",
			"isort --check-only " + other,
			"isort --diff " + other,
			"eslint " + other,
			"eslint --fix src",
			"eslint --fix-dry-run " + other,
			"eslint -c " + other + "/eslint.config.js --fix src",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
