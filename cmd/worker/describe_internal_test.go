package main

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
)

// --check-config's summary counts the groups the worker will have: the
// exec group a shell or Python tool adds when the file declares none is
// one of them (the ready line lists it), so "0 groups" would contradict it.
func TestDescribeCountsAddedExecGroup(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{"builtins:\n  tools: [{name: echo}, {name: execute_shell_command}]\n", "1 groups"},
		{"groups: [{name: exec, description: x}]\nbuiltins:\n  tools: [{name: execute_shell_command}, {name: execute_python_code}]\n", "1 groups"},
		{"groups: [{name: web, description: x}]\nbuiltins:\n  tools: [{name: execute_shell_command, group: web}]\n", "1 groups"},
		{"builtins:\n  tools: [{name: echo}]\n", "0 groups"},
	} {
		cfg, err := config.Parse("worker.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(cfg); !strings.Contains(got, ", "+tc.want+",") {
			t.Errorf("%s: describe says %q, want %q", tc.yaml, got, tc.want)
		}
	}
}
