package permission

import "testing"

// TestMultiDigitDescriptorIsAWordToDash: dash takes one digit before ">"
// or "<" for a file descriptor; more digits are a word, so
// `ls && 211>&2` runs the command "211" there. The digits were dropped
// as a descriptor, which left no command to check: the line was
// read-only and allowed without asking, even in explore mode.
func TestMultiDigitDescriptorIsAWordToDash(t *testing.T) {
	for _, c := range []string{"ls && 211>&2", "ls; 10</dev/null"} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	if !shellReadOnly("ls 2>/dev/null 1>&2") {
		t.Error("ls 2>/dev/null 1>&2 is not read-only")
	}
}
