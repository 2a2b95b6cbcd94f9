package builtin_test

import (
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/builtin"
)

// A command a signal ended has the return code AgentScope shows, Python's
// returncode for it: minus the signal's number (asyncio's
// Process.returncode, 1.x _coding/_shell.py:45 and _python.py:60), so the
// model can tell a kill (-9) from a crash (-11) or an exit code; a
// timeout's own kill still shows -1, as AgentScope sets it (TestExecTimeoutAsAgentScope).
func TestSignalReturnCodeAsAgentScope(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	for _, tt := range []struct {
		tool  string
		input map[string]any
		code  int
	}{
		{builtin.ExecuteShellCommand, map[string]any{"command": "kill -9 $$"}, -9},
		{builtin.ExecuteShellCommand, map[string]any{"command": "kill -TERM $$"}, -15},
		{builtin.ExecutePythonCode, map[string]any{"code": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"}, -11},
	} {
		r := invoke(t, tk, tt.tool, tt.input)
		want := fmt.Sprintf("<returncode>%d</returncode>", tt.code)
		if got := wantOK(t, r); got != want {
			t.Errorf("%s %v: text %q, want %q", tt.tool, tt.input, got, want)
		}
		if got := r.Metadata["exit_code"]; got != tt.code {
			t.Errorf("%s %v: exit_code = %v, want %d", tt.tool, tt.input, got, tt.code)
		}
	}
}
