package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExportedBeforeCommand: a variable exported earlier on the line
// is in the environment of the commands after it, as one set before a
// command is, yet "export UV_PROJECT=/srv/other; uv run pytest" (and
// declare -x, typeset -x, "VAR=x; export VAR", every assignment after
// set -a) was allowed by "export:*" and "uv:*" though it runs that
// project's code, where "UV_PROJECT=/srv/other uv run pytest" asks.
// Exported variables are now read by the commands after them as the
// ones set before them are; and CARGO_TARGET_DIR, GOPATH (GOBIN,
// GOMODCACHE, GOCACHE) and npm_config_prefix, set either way, are read
// as the directories cargo and go write and the prefix whose npmrc npm
// reads. A plain assignment, not exported, reaches no command.
func TestExportedBeforeCommand(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "uv", "uvx", "cargo", "go", "npm", "export", "declare", "typeset", "local",
		"set", "pytest", "env", "sh", "git", "UV_PROJECT=/srv/other", "UV_PROJECT=sub"), WorkingDirs: []string{wd}}
	checkLines(t, p, []string{
		"export UV_PROJECT=sub; uv run pytest",
		"export UV_PROJECT=sub && uv sync",
		"uv run pytest; export UV_PROJECT=/srv/other",
		"UV_PROJECT=/srv/other; uv run pytest",
		"declare UV_PROJECT=/srv/other; uv run pytest",
		"typeset -r UV_PROJECT=/srv/other; uv run pytest",
		"export CARGO_TARGET_DIR=target2 && cargo build",
		"export CARGO_TARGET_DIR=sub/target; cargo test",
		"export GOFLAGS=-mod=mod && go build ./...",
		"export GOPATH=" + filepath.Join(wd, "gopath") + "; go install example.com/x@latest",
		"export npm_config_loglevel=silent; npm test",
		"export FOO=1; cargo build",
		"export -n UV_PROJECT=/srv/other; uv run pytest",
		"set -e; UV_PROJECT=/srv/other; uv run pytest",
	}, []string{
		"export UV_PROJECT=/srv/other; uv run pytest",
		"export UV_PROJECT=/srv/other && uv run pytest",
		"export UV_CACHE_DIR=/srv/c\nuv pip install foo",
		"export UV_WORKING_DIR=/srv/other; uvx ruff check",
		"export UV_PROJECT_ENVIRONMENT=/srv/venv; uv sync",
		"UV_PROJECT=/srv/other; export UV_PROJECT; uv run pytest",
		"export UV_PROJECT; UV_PROJECT=/srv/other; uv run pytest",
		"declare -x UV_PROJECT=/srv/other; uv run pytest",
		"declare -gx UV_PROJECT=/srv/other; uv run pytest",
		"declare -r -x UV_PROJECT=/srv/other; uv run pytest",
		"export -- UV_PROJECT=/srv/other; uv run pytest",
		"typeset -x UV_WORKING_DIR=/srv/other; uv sync",
		"set -a; UV_PROJECT=/srv/other; uv run pytest",
		"set -o allexport; UV_PROJECT=/srv/other; uv run pytest",
		"export UV_PROJECT=/srv/other; sh -c 'uv run pytest'",
		"export UV_PROJECT=/srv/other; env uv run pytest",
		"env UV_PROJECT=/srv/other uv run pytest",
		"export CARGO_TARGET_DIR=/srv/t && cargo build",
		"export CARGO_TARGET_DIR=../t; cargo build",
		"export GOPATH=/srv/gp; go install example.com/x@latest",
		"export GOBIN=/srv/bin; go install example.com/x@latest",
		"export GOFLAGS=-toolexec=rm && go build ./...",
		"export npm_config_prefix=/srv/p; npm install -g foo",
		"export NPM_CONFIG_PREFIX=/srv/p; npm install -g foo",
		"export npm_config_script_shell=rm; npm test",
		"export GIT_EDITOR=rm; git commit",
	})
	// Set before the command, they are read too: a rule naming the
	// assignment does not cover it.
	for _, line := range []string{
		"CARGO_TARGET_DIR=/srv/t cargo build",
		"CARGO_TARGET_DIR=/srv/t cargo",
		"GOPATH=/srv/gp go install",
		"GOMODCACHE=/srv/mod go mod",
		"npm_config_prefix=/srv/p npm install",
	} {
		p := Policy{Rules: shellAllowRules(t, line), WorkingDirs: []string{wd}}
		checkLines(t, p, nil, []string{line + " foo"})
	}
}

// TestExportsCarriedBounded: each command is given the variables
// exported before it, so a line of many exports and many commands gave
// each command all of them, its checks reading them all, the line's
// cost growing as their product; only the variables read in a
// command's environment are carried, each once with its last value.
func TestExportsCarriedBounded(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "export V%d=1 UV_PROJECT=/srv/%d GIT_CONFIG_KEY_%d=x npm_config_prefix=%d; uv run pytest; ", i, i, i, i)
	}
	line, err := parseShell(b.String())
	if err != nil {
		t.Fatal(err)
	}
	last := line.cmds[len(line.cmds)-1]
	for _, c := range line.cmds {
		if len(c.exported) > 3 {
			t.Fatalf("%q is given %d exported variables, want at most 3", c.text(), len(c.exported))
		}
	}
	want := []string{"UV_PROJECT=/srv/1999", "GIT_CONFIG_KEY_1999=x", "npm_config_prefix=1999"}
	if !slices.Equal(last.exported, want) {
		t.Fatalf("the last command is given %q, want %q", last.exported, want)
	}
}
