package permission

import "testing"

// TestParameterExpansionHidesNothing: inside ${…} the shell reads "#"
// and "<<" as characters of the word, not as a comment or a
// here-document. They were read as those, which hid the rest of the line
// or the lines after it: `ls ${x:- #}; touch f` and `ls ${x:-<<E}` with
// `touch f` on the next line (dash and bash run touch) were read-only and
// allowed without asking, even in explore mode.
func TestParameterExpansionHidesNothing(t *testing.T) {
	for _, c := range []string{
		"ls ${x:- #}; touch f",
		"ls ${x:-<<E}\ntouch f",
		"cat ${x=<<E\n}\ntouch f",
		"echo ${x:-${y:- #}}; touch f",
		"echo \\$${x:- #}; touch f",
		// The first "}" ends ${…}, and "$${" opens none: the "#" after
		// is a comment, where a quote would hide the line after it.
		"echo ${x:-{a} #'\ntouch f\n'",
		"echo $${x:- #'\ntouch f\n'",
		"echo $${x:- #}EO\\\nF\n",
	} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"echo ${HOME} # a comment; rm x", "ls ${x#a} ${#x}", "cat <<E\n${x}\nE\nls"} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
}
