package permission

import "testing"

// TestAnsiCControlBeforeQuote: bash ends a $'…' string at its first quote
// not right after a backslash, and "\c" takes the character after it as
// a control character only when decoding the string, inside it: in
// $'\'\c' the last quote ends the string. The command line read "\c" as
// taking that quote and the string as going on to the next quote, two
// lines further, while dash's reading ($, '\', c, and a quote opening at
// the same place) saw the same, so
//
//	echo $'\'\c'
//	touch x
//	echo ' #'
//
// (bash runs touch) was one echo, read-only and allowed without asking
// even in explore mode.
func TestAnsiCControlBeforeQuote(t *testing.T) {
	for _, c := range []string{
		"echo $'\\'\\c'\ntouch x\necho ' #'",
		"echo $'\\'\\c\\\\'\ntouch x\necho ' #'",
		"echo $'\\'\\c'; touch x; echo ' #'",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for line, want := range map[string]string{
		`echo $'a\cAb'`:  "echo a\x01b",
		`echo $'\c'`:     `echo \c`,
		`echo $'x\c\\'`:  "echo x\x1c",
		`echo $'\x41\''`: "echo A'",
	} {
		l, err := parseShellAs(line, true)
		if err != nil || len(l.cmds) != 1 || l.cmds[0].text() != want {
			var got []string
			for _, c := range l.cmds {
				got = append(got, c.text())
			}
			t.Errorf("%q: %q, %v; want %q", line, got, err, want)
		}
	}
}
