package permission

import "testing"

// TestHereDocEndsAsBothShellsRead: where a here-document's delimiter is
// unquoted, bash joins a line ending with a backslash to the next (and
// strips <<-'s tabs from the joined line) before it compares, and dash
// does not, so the two may end the body at different lines. The body
// was taken to end at the first line either read as the delimiter, and
// the lines after it as commands; a "<<" among those, which the other
// shell reads as the body's, then hid in its own body the commands
// that shell runs after the real delimiter: "cat <<EOF", "body\",
// "EOF", "cat <<X", "EOF", "echo hi > ../out.txt", "X" (bash writes
// ../out.txt; "EO\" and "F" for dash; "<tab>EO\" and "<tab>F" under
// <<- for both) was read-only and allowed by "cat:*". A body the two
// shells end after different lines now makes the line unparsable.
func TestHereDocEndsAsBothShellsRead(t *testing.T) {
	wd := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "cat"), WorkingDirs: []string{wd}}
	for _, c := range []string{
		"cat <<EOF\nbody\\\nEOF\ncat <<X\nEOF\necho hi > ../out.txt\nX",
		"cat <<EOF\nEO\\\nF\ncat <<Y\nEOF\necho hi > ../out.txt\nY",
		"cat <<-EOF\n\tEO\\\n\tF\ncat <<Y\nEOF\necho hi > ../out.txt\nY",
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
	// Bodies both shells end at the same line stay read-only.
	for _, c := range []string{
		"cat <<EOF\nmake \\\n  all\nEOF\nls",
		"cat <<'EOF'\nbody\\\nEOF\nls",
		"cat <<-EOF\n\t\\\n\tEOF\nls",
		"cat <<-EOF\n\tbody\n\tEOF\nls",
		"cat <<EOF\nbody\\\nEOF\n", // bash reads the rest as the body
	} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}
