package permission

import "testing"

// TestContinuationJoinsTokens: sh and bash remove a backslash and a
// newline before they read operators and expansions, so one between
// "$" and "(" makes a command substitution, and one inside "<<<" a
// here-string. The line was read with them in place: `echo $\` then
// `(touch f)` on the next line (dash and bash run touch), the same in
// double quotes and in a here-document's body, and `cat <\` then
// `<<EOF` and a command on the next line, were read-only and allowed
// without asking, even in explore mode. So was a here-document whose
// delimiter line bash reads from two lines joined (`EO\` and `F`), the
// commands after it hidden in its body, and `cat $\` with `${x:- #}<<E`
// next (to the shell "$$", then a comment).
func TestContinuationJoinsTokens(t *testing.T) {
	for _, c := range []string{
		"echo $\\\n(touch f)",
		"echo $\\\n\\\n(touch f)",
		"echo \"$\\\n(touch f)\"",
		"cat <<EOF\n$\\\n(touch f)\nEOF",
		"cat <\\\n<<EOF\ntouch f",
		"ls >\\\n(touch f)",
		"echo $\\\n{x@P}",
		"cat <<EOF\nEO\\\nF\ntouch f\nEOF",
		"cat $\\\n${x:- #}<<E\ntouch f",
	} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	// Continued lines that join no token stay read-only.
	for _, c := range []string{
		"grep -rn foo \\\n  src/ \\\n  | head",
		"git log --oneline &&\\\n  git status",
		"cat a |\\\ngrep x",
		"gr\\\nep x f",
		"cat <<'EOF'\n$\\\n(x)\nEOF",
	} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
}
