package permission

import "testing"

// TestHereDocTabDelimiterBashEnds: under <<- with a delimiter quoted
// with a tab in front (<<-'<tab>EOF'), bash compares each line as it is
// before it strips its tabs, so the line "<tab>EOF" ends the body, while
// the line was taken to end it only stripped, which no line can equal:
// the body went on to the end and hid the commands after it, so "cat
// <<-'<tab>EOF'", "<tab>EOF", "echo hi > ../out.txt" (bash writes
// ../out.txt; dash reads it all as the body) was read-only and allowed
// by "cat:*". The body now ends where bash ends it.
func TestHereDocTabDelimiterBashEnds(t *testing.T) {
	p := Policy{Rules: shellAllowRules(t, "cat"), WorkingDirs: []string{t.TempDir()}}
	for _, c := range []string{
		"cat <<-'\tEOF'\n\tEOF\necho hi > ../out.txt\n\tEOF",
		"cat <<-\"\tEOF\"\n\tEOF\necho hi > ../out.txt",
		"cat <<-\\\tEOF\n\tEOF\necho hi > ../out.txt",
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
	for _, c := range []string{
		"cat <<-'\tEOF'\n\tEOF\nls",
		"cat <<-'\tEOF'\n\t\tEOF\necho hi > ../out.txt", // no line ends it: all body
	} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
}
