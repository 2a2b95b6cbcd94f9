package permission

import "testing"

// TestUvPipCompileOutputWrites: uv pip compile -o FILE (--output-file)
// writes the pinned requirements to FILE, yet "uv:*" allowed "uv pip
// compile requirements.in -o /srv/other/requirements.txt", a write there
// that a redirection asks for, as uv pip was read as pip, which has no
// compile. Its -o file is now a file written; inside it stays uv's.
func TestUvPipCompileOutputWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "uv"), WorkingDirs: dirs}
		checkLines(t, p, []string{
			"uv pip compile requirements.in -o requirements.txt",
			"uv pip compile pyproject.toml --output-file=requirements.lock",
			"uv pip compile -q requirements.in -c " + other + "/constraints.txt -o requirements.txt",
			"uv pip compile requirements.in",
		}, []string{
			"uv pip compile requirements.in -o " + other + "/requirements.txt",
			"uv pip compile requirements.in --output-file " + other + "/r.txt",
			"uv pip compile requirements.in --output-file=" + other + "/r.txt",
			"uv pip compile -o" + other + "/r.txt requirements.in",
			"uv pip compile -qo " + other + "/r.txt requirements.in",
		})
	}
}
