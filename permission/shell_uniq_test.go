package permission

import "testing"

// TestUniqOperandsAfterDoubleDash: after "--" every argument is an
// operand, "-z" too, and uniq writes its second operand: `uniq a -- -z`
// (dash and bash alike make the file -z) was counted as one operand,
// read-only and allowed without asking, even in explore mode.
func TestUniqOperandsAfterDoubleDash(t *testing.T) {
	for _, c := range []string{"uniq a -- -z", "uniq -c a -- -", "uniq -- a -z"} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"uniq -c a", "uniq -- -a", "uniq -u --"} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
}
