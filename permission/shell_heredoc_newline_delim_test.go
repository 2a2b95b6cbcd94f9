package permission

import "testing"

// TestHereDocNewlineDelimiterUnreadable: a delimiter quoted across a
// newline (<<'E<newline>F') ends no body to bash, which compares one
// line at a time, and the body to dash at the lines "E" and "F", so
// "cat <<'E", "F'", "E", "F", "echo hi > ../out.txt" was read as all
// body, read-only and allowed by "cat:*", though dash runs the echo and
// writes ../out.txt. Such a here-document now makes the line
// unparsable.
func TestHereDocNewlineDelimiterUnreadable(t *testing.T) {
	p := Policy{Rules: shellAllowRules(t, "cat"), WorkingDirs: []string{t.TempDir()}}
	for _, c := range []string{
		"cat <<'E\nF'\nE\nF\necho hi > ../out.txt",
		"cat <<\"E\nF\"\nE\nF\necho hi > ../out.txt",
		"cat <<E'\n'F\nE\nF\necho hi > ../out.txt",
	} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
		if d := Decide(p, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("%q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
}
