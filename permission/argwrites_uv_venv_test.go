package permission

import "testing"

// TestUvVenvWrites: "uv venv /srv/other/.venv" was allowed by "uv:*"
// though it makes a virtual environment there; uv venv writes its
// operand, .venv without one (under --directory's directory), as
// python -m venv's operands are written.
func TestUvVenvWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "uv"), WorkingDirs: []string{wd}}
	checkLines(t, p, []string{
		"uv venv",
		"uv venv .venv",
		"uv venv --python 3.12 env",
		"uv -q venv --seed",
	}, []string{
		"uv venv " + other + "/.venv",
		"uv venv ../.venv",
		"uv venv --python 3.12 " + other + "/env",
		"uv --directory " + other + " venv",
		"uv venv --prompt x " + other + "/env",
	})
}
