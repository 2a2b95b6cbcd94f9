package permission

import "testing"

// TestAnsiCOctalWraps: bash keeps the low eight bits of an octal escape
// of $'…' (\544 is 0o544 & 0xff, a "d"), while the command line decoded
// it as the code point 0o544: `find . $'-\544elete'` is find -delete to
// bash, and was read-only and allowed without asking even in explore
// mode, as was `sort in $'-\557' /tmp/x` (sort -o).
func TestAnsiCOctalWraps(t *testing.T) {
	for _, c := range []string{
		`find . $'-\544elete'`,
		`sort in $'-\557' /tmp/x`,
		`git log $'--\557utput=/tmp/x'`,
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for line, want := range map[string]string{
		`echo $'\544'`:  "echo d",
		`echo $'\0101'`: "echo \b1",
		`echo $'\101'`:  "echo A",
	} {
		l, err := parseShellAs(line, true)
		if err != nil || len(l.cmds) != 1 || l.cmds[0].text() != want {
			t.Errorf("%q: %+v, %v; want %q", line, l.cmds, err, want)
		}
	}
	if c := `find . -name $'\x2a.go'`; shellReadOnly(c) != true {
		t.Errorf("shellReadOnly(%q) = false, want true", c)
	}
}
