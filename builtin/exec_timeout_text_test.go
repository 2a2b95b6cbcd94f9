package builtin_test

import (
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// A command or code that runs past its timeout ends with AgentScope's
// sentence (1.x _coding/_shell.py:48-51, "The command execution
// exceeded the timeout of {timeout} seconds."; _coding/_python.py:63-66,
// "The code execution …") after the output so far, and then the return
// code -1 its text shows (<returncode>-1</returncode>), as every other
// ending writes its code last. The output before it ("123\n") is there
// unless a busy machine kept the command from writing it in time.
func TestExecTimeoutAsAgentScope(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	for _, tt := range []struct {
		tool  string
		input map[string]any
		want  string
	}{
		{builtin.ExecuteShellCommand, map[string]any{"command": "echo 123; sleep 100; echo 456", "timeout": 0.5},
			"TimeoutError: The command execution exceeded the timeout of 0.5 seconds.\n<returncode>-1</returncode>"},
		{builtin.ExecuteShellCommand, map[string]any{"command": "printf 123; sleep 100", "timeout": 1},
			"TimeoutError: The command execution exceeded the timeout of 1 seconds.\n<returncode>-1</returncode>"},
		{builtin.ExecutePythonCode, map[string]any{"code": "print('123')\nimport time\ntime.sleep(100)\nprint('456')", "timeout": 0.5},
			"TimeoutError: The code execution exceeded the timeout of 0.5 seconds.\n<returncode>-1</returncode>"},
	} {
		r := invoke(t, tk, tt.tool, tt.input)
		if r.State != toolkit.StateError || r.Code != toolkit.CodeTimeout {
			t.Errorf("%s %v: state %s code %s, want error timeout", tt.tool, tt.input, r.State, r.Code)
		}
		if got := r.Text(); got != "123\n"+tt.want && got != tt.want {
			t.Errorf("%s %v:\n got %q\nwant %q (after \"123\\n\" or alone)", tt.tool, tt.input, got, tt.want)
		}
		if r.Metadata["exit_code"] != -1 {
			t.Errorf("%s: exit_code = %v, want -1", tt.tool, r.Metadata["exit_code"])
		}
	}
}
