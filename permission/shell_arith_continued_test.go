package permission

import "testing"

// TestValuesEvaluatedAcrossContinuedLines: the shell removes a backslash
// and a newline inside ${…} before it reads the expansion, so
// `${PWD\<newline>:_}` is ${PWD:_}, whose offset bash evaluates (running
// the command substitutions of "_"'s array subscript), while the check
// for such expansions stopped at the backslash: `echo 'a[$(touch y)]';
// echo ${PWD\<newline>:_}` (bash runs touch), in double quotes or a
// here-document too, was read-only and allowed without asking even in
// explore mode.
func TestValuesEvaluatedAcrossContinuedLines(t *testing.T) {
	for _, c := range []string{
		"echo 'a[$(touch y)]'; echo ${PWD\\\n:_}",
		"echo 'a[$(touch y)]'; echo ${PWD:\\\n_}",
		"echo 'a[$(touch y)]'; echo ${P\\\nWD\\\n\\\n[_]}",
		"echo 'a[$(touch y)]'; echo \"${PWD\\\n:_}\"",
		"echo 'a[$(touch y)]'; echo ${\\\n!_}",
		"echo 'a[$(touch y)]'; echo ${#\\\nPWD[_]}",
		"echo 'a[$(touch y)]'; cat <<EOF\n${PWD\\\n:_}\nEOF",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"echo ${PWD\\\n:-x} ${H\\\nOME}",
		"echo ${x:\\\n-a}",
	} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
}
