package permission

import "testing"

// TestAnsiCNulEndsString: bash ends the text of a $'…' string at an escape
// that makes a NUL (\0, \x00, \u0000, \c@, \400), dropping the rest of
// it, while the command line kept the NUL and what follows in the word:
// `find . $'-delete\0x'` is find -delete to bash and `test $'-v\0'
// 'a[$(touch x)]'` runs touch, and both were read-only and allowed
// without asking even in explore mode.
func TestAnsiCNulEndsString(t *testing.T) {
	for _, c := range []string{
		`find . $'-delete\0x'`,
		`find . $'-delete\x00'`,
		`find . $'-delete\u0000'`,
		`find . $'-delete\c@'`,
		`find . $'-delete\400'`,
		`test $'-v\0' 'a[$(touch x)]'`,
		`[ $'-v\0' 'a[$(touch x)]' ]`,
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for line, want := range map[string]string{
		`echo $'ab\0cd'x`: "echo abx",
		`echo $'ab\x00'`:  "echo ab",
		`echo $'\0'`:      "echo ",
	} {
		l, err := parseShellAs(line, true)
		if err != nil || len(l.cmds) != 1 || l.cmds[0].text() != want {
			t.Errorf("%q: %+v, %v; want %q", line, l.cmds, err, want)
		}
	}
}
