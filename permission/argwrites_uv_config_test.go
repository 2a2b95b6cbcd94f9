package permission

import "testing"

// TestUvConfigFileWrites: a uv.toml may set where uv writes (pip's
// target, prefix and system, the cache directory), yet "uv:*" allowed
// "uv --config-file uv.toml pip install foo" (and --config-file=FILE,
// uvx's, and UV_CONFIG_FILE=FILE before uv), where "curl -K FILE" with
// "curl:*" asks, as its options may name any file; such a line now
// writes a file not known here, as curl -K's does, and so does
// --cache-dir's directory for uvx as for uv.
func TestUvConfigFileWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: append(shellAllowRules(t, "uv", "uvx", "ruff"), rule(t, "execute_shell_command:UV_CONFIG_FILE=uv.toml uv:*", Allow)), WorkingDirs: dirs}
		checkLines(t, p, []string{
			"uv pip install foo",
			"uv --no-config pip install foo",
			"uvx ruff check",
			"uvx --cache-dir .cache/uv ruff check",
			"uv run ruff --config-file x",
		}, []string{
			"uv run --config-file x ruff",
			"uv --config-file uv.toml pip install foo",
			"uv --config-file=uv.toml sync",
			"uv pip install --config-file uv.toml foo",
			"uv -q --config-file " + other + "/uv.toml run ruff",
			"uvx --config-file uv.toml ruff check",
			"uv tool run --config-file=uv.toml ruff",
			"UV_CONFIG_FILE=uv.toml uv pip install foo",
			"uvx --cache-dir " + other + " ruff check",
		})
	}
}
