package builtin_test

import (
	"testing"

	"github.com/toolbus/toolbus/builtin"
)

// Python code runs in UTF-8 whatever the worker's environment says, as
// AgentScope runs it (1.x _coding/_python.py:43-45 sets PYTHONUTF8=1 and
// PYTHONIOENCODING=utf-8 over os.environ): its output is UTF-8, and so is
// what open() reads and writes by default (UTF-8 mode), also on a worker
// whose locale is not. The worker's environment here says ASCII.
func TestPythonRunsInUTF8(t *testing.T) {
	t.Setenv("PYTHONIOENCODING", "ascii")
	t.Setenv("PYTHONUTF8", "0")
	tk, _ := execKit(t, builtin.Config{})
	r := invoke(t, tk, builtin.ExecutePythonCode, map[string]any{"code": "import sys\nprint('héllo 日本', sys.flags.utf8_mode, sys.stdout.encoding)"})
	want := "héllo 日本 1 utf-8\n<returncode>0</returncode>"
	if got := wantOK(t, r); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
