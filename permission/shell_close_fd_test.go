package permission

import "testing"

// TestCloseThenWord: bash reads "<&-" or ">&-" as closing a descriptor,
// and what is glued to the "-" as the next word: `echo hi; <&-rm ls keep`
// runs rm on the files ls and keep. The glued word was read as the
// redirection's target, so the command read was `ls keep`: read-only,
// allowed without asking even in explore mode.
func TestCloseThenWord(t *testing.T) {
	for _, c := range []string{"echo hi; <&-rm ls keep", "echo hi; 0<&-'rm' ls keep", "ls; >&-touch ls"} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	if !shellReadOnly("ls <&- 2>&-") {
		t.Error("ls <&- 2>&- is not read-only")
	}
}
