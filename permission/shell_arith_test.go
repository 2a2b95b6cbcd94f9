package permission

import "testing"

// TestValuesEvaluatedAsExpressions: bash reads a variable's value as an
// arithmetic expression or a name in $[…], ${!NAME}, ${NAME[…]} and
// ${NAME:OFFSET}, and an array subscript in that value runs its command
// substitutions. The value need not be on the line as one: "_" holds the
// last argument of the command before. `echo 'a[$(touch f)]'; echo
// ${!_}` (or $[_], ${y[_]}, ${s:_}, in double quotes or a here-document
// too) and `echo ${x='a[$(touch f)]'} ${y[x]}` make f with bash, and were
// read-only and allowed without asking, even in explore mode.
func TestValuesEvaluatedAsExpressions(t *testing.T) {
	for _, c := range []string{
		"echo 'a[$(touch f)]'; echo ${!_}",
		"echo 'a[$(touch f)]'; echo $[_]",
		"echo 'a[$(touch f)]'; echo ${y[_]}",
		"echo 'a[$(touch f)]'; echo ${#y[_]}",
		"echo 'a[$(touch f)]'; echo ${s:_}",
		"echo 'a[$(touch f)]'; echo ${s: _}",
		"echo 'a[$(touch f)]'; echo ${@:_}",
		"echo 'a[$(touch f)]'; echo \"${!_}\"",
		"echo 'a[$(touch f)]'; cat <<E\n${!_}\nE",
		"echo ${x='a[$(touch f)]'} ${y[x]}",
	} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	// Defaults, lengths and patterns evaluate nothing; a quoted or escaped
	// "$" is a character.
	for _, c := range []string{"echo ${x:-a} ${x:=b} ${x:+c} ${x:?d} ${#x} ${x#*/} ${1}", "echo '${!x}' \\$[x]", "cat <<'E'\n${!_}\nE"} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
}
