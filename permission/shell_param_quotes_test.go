package permission

import (
	"strings"
	"testing"
)

// TestQuotesInsideParameterInDoubleQuotes: inside double quotes the shell
// reads the quotes of a ${…} as quotes of their own: "${x:-"'"}" is one
// word whose "'" is quoted. The line was read as ending the double-quoted
// word at the inner quote and the "'" as opening a single-quoted string,
// which hid the lines up to the next "'": `echo "${x:-"'"}"`, then `touch
// f`, then `echo "'"` and a line with a lone quote (dash and bash run
// touch, then stop at the quote) was one echo, read-only and allowed
// without asking, even in explore mode. Such a line is unparsable now (a
// safety ask).
func TestQuotesInsideParameterInDoubleQuotes(t *testing.T) {
	for _, c := range []string{
		"echo \"${x:-\"'\"}\"\ntouch f\necho \"'\"\n\"",
		"echo \"${x#\"'\"}\"\ntouch f\necho \"'\"\n\"",
		"echo \"${x:-${y:-\"'\"}}\"\ntouch f\necho \"'\"\n\"",
		"echo \"${x:-'\"'}\"\ntouch f\necho '\"'",
	} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"echo \"${HOME}/x ${x:-a} ${x#\\\"} ${#x}\"", "echo \"${x:-${y}}\" '\"'"} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
	// Each ${…} is looked through once, however deep they nest.
	if !shellReadOnly("echo \"" + strings.Repeat("${x:-", 100000) + strings.Repeat("}", 100000) + "\"") {
		t.Error("100000 nested ${x:-…} in double quotes are not read-only")
	}
}
