package toolkit

import (
	"strings"
	"testing"
)

// The arguments a model wrote are shown in the reminder as Python's
// repr shows a str: characters str.isprintable refuses (a no-break
// space, a zero-width space, a line separator, a private-use one) are
// escaped, as AgentScope's text shows them, not written raw.
func TestRawInputReminderEscapesAsRepr(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"{\u00a0x", `'{\xa0x'`},
		{"{\u200bx", `'{\u200bx'`},
		{"{\u2028x", `'{\u2028x'`},
		{"{\U000F0000x", `'{\U000f0000x'`},
		{"{\u0085x", `'{\x85x'`},
		{"{é'x", `"{é'x"`},
	} {
		_, err := ParseRawInput(c.raw)
		if err == nil {
			t.Fatalf("%q: parsed", c.raw)
		}
		if !strings.Contains(err.Error(), "your_tool_arguments = "+c.want+"\n") {
			t.Errorf("%q: the reminder does not show %s:\n%s", c.raw, c.want, err)
		}
	}
}
