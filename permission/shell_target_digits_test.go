package permission

import "testing"

// TestDigitsAfterRedirectionAreItsTarget: right after a redirection
// operator, digits are the file it names even when another operator
// follows them: dash (whose descriptors are one digit) runs
// `grep x <>21>&2`, creating the file "21". They
// were dropped as the next redirection's descriptor, so the line was
// read-only, allowed without asking even in explore mode.
func TestDigitsAfterRedirectionAreItsTarget(t *testing.T) {
	for _, c := range []string{"grep x <>21>&2", "cat .env <>25>&1"} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	if !shellReadOnly("cat f </dev/null 2>/dev/null") || !shellReadOnly("ls 2>&1 >/dev/null") {
		t.Error("redirections of descriptors to /dev/null or each other are not read-only")
	}
}
