package permission

import "testing"

// TestQuotedDigitsAreNoDescriptor: digits right before ">" or "<" name a
// file descriptor only when unquoted; quoted ("2", '2', \2) they are a
// word, here the file a redirection writes. The quoted word was dropped
// as a descriptor, so `cat .env >\2>/dev/null` (which writes .env to the
// file "2") was read-only and allowed without asking, even in explore
// mode.
func TestQuotedDigitsAreNoDescriptor(t *testing.T) {
	for _, c := range []string{"cat .env >\\2>/dev/null", "cat .env >'2'>/dev/null", "echo x &>\"1\"</dev/null"} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	if !shellReadOnly("ls 2>/dev/null") || !shellReadOnly("cat f 2>&1 | grep x") {
		t.Error("an unquoted descriptor's redirection to /dev/null or another descriptor is not read-only")
	}
}
