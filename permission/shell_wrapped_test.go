package permission

import (
	"errors"
	"strings"
	"testing"
)

// TestDenyRuleSeesSubstitutions: a deny (or ask) rule on a command
// matches it inside a command or process substitution, and the
// substitution is read as the shell reads it (quotes inside "$(…)" do not
// end the outer string). In bypass mode the rules are all that stands.
func TestDenyRuleSeesSubstitutions(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny), rule(t, "execute_shell_command:git push:*", Ask)}}
	for _, c := range []string{
		"echo $(rm -rf x)",
		"echo \"$(ls; rm -rf x)\"",
		"echo `rm -rf x`",
		"cat <(rm -rf x)",
		"echo $(echo $(rm -rf x))",
		`echo "$(printf '"')" ; rm -rf x ; echo '"'`,
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if d := Decide(deny, shell, cmd("echo $(git push)")); d.Behavior != Ask {
		t.Errorf("ask git push:*, echo $(git push): %s (%s), want ask", d.Behavior, d.Reason)
	}
	for _, c := range []string{"echo rm", "echo $(date)"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}

// TestDeepSubstitutions: substitutions nested deeper than maxNesting are
// not read (the line is unparsable: a safety ask), so reading a line
// stays linear in its length; nested quoted substitutions were each read
// again at every level.
func TestDeepSubstitutions(t *testing.T) {
	const n = 20000
	for _, line := range []string{
		"echo " + strings.Repeat(`"$(`, n) + "x" + strings.Repeat(`)"`, n),
		"echo " + strings.Repeat(`$(`, n) + "x" + strings.Repeat(`)`, n),
	} {
		if _, err := parseShell(line); !errors.Is(err, errTooDeep) {
			t.Errorf("%d nested substitutions: %v, want %v", n, err, errTooDeep)
		}
		if d := Decide(Policy{}, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%d nested substitutions: %s (%s), want a safety ask", n, d.Behavior, d.Reason)
		}
	}
	line := "echo " + strings.Repeat(`"$(`, maxNesting) + "rm -rf x" + strings.Repeat(`)"`, maxNesting)
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	if d := Decide(deny, shell, cmd(line)); d.Behavior != Deny {
		t.Errorf("deny rm:*, rm in %d nested substitutions: %s (%s)", maxNesting, d.Behavior, d.Reason)
	}
}

// TestDenyRuleSeesWrappedCommands: a deny (or ask) rule on a command
// matches it as the script of sh -c or eval, behind a wrapper (sudo, env,
// nice, xargs, timeout, …), a keyword (then, do, !) or a group's "(" or
// "{", as the command of find -exec, or by its path (/bin/rm).
func TestDenyRuleSeesWrappedCommands(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny), rule(t, "execute_shell_command:git push:*", Ask)}}
	for _, c := range []string{
		"bash -c 'rm -rf x'",
		"sh -c \"ls; rm -rf x\"",
		"eval rm -rf x",
		"eval 'rm -rf x'",
		"sudo rm -rf x",
		"sudo -u root rm -rf x",
		"env FOO=1 rm -rf x",
		"env -i rm -rf x",
		"nice -n 5 rm -rf x",
		"nohup rm -rf x",
		"xargs rm -rf < list",
		"xargs -0 -n1 rm -rf < list",
		"timeout 5 rm -rf x",
		"timeout -s KILL 5 rm -rf x",
		"command rm -rf x",
		"exec rm -rf x",
		"time rm -rf x",
		"if true; then rm -rf x; fi",
		"while false; do rm -rf x; done",
		"! rm -rf x",
		"(rm -rf x)",
		"{ rm -rf x; }",
		"find . -name '*.o' -exec rm -f {} ;",
		"find . -execdir rm -f {} +",
		"/bin/rm -rf x",
		"./rm -rf x",
		"sudo sh -c 'nice rm -rf x'",
		"env -S 'rm -rf x'",
		strings.Repeat("sudo ", 20) + "rm -rf x", // deeper than is read: could be anything
		strings.Repeat("eval ", 20) + "rm -rf x",
		"echo " + strings.Repeat(`"$(`, 20) + "rm -rf x" + strings.Repeat(`)"`, 20),
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"sudo git push origin", "cd repo && command git push"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Ask {
			t.Errorf("ask git push:*, %q: %s (%s), want ask", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"grep -r rm .", "ls -l rmdir", "sudo ls", "command -v rm"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
	// A removal of the home directory behind a wrapper is a safety ask,
	// as without one.
	allowSudo := Policy{Rules: []Rule{rule(t, "execute_shell_command:sudo:*", Allow)}}
	if d := Decide(allowSudo, shell, cmd("sudo rm -rf ~")); d.Behavior != Ask || !d.Safety {
		t.Errorf("allow sudo:*, sudo rm -rf ~: %s (%s), want a safety ask", d.Behavior, d.Reason)
	}
}

// TestDenyRuleSeesComputedNames: a command whose name the shell computes
// ($X, r$@m, ${x:-rm}) may be any command: every deny and ask pattern
// matches it.
func TestDenyRuleSeesComputedNames(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{"$X -rf y", "r$@m -rf y", "${x:-rm} -rf y", `"$X" -rf y`, "sudo $X -rf y"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"echo $HOME", "ls ${PWD}", "X=1 make"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
	// Only a rule allowing every command covers one that may be any.
	for spec, want := range map[string]Behavior{"execute_shell_command:*": Allow, "execute_shell_command:vim:*": Ask} {
		if d := Decide(Policy{Rules: []Rule{rule(t, spec, Allow)}}, shell, cmd("$EDITOR notes.txt")); d.Behavior != want {
			t.Errorf("allow %s, $EDITOR notes.txt: %s (%s), want %s", spec, d.Behavior, d.Reason, want)
		}
	}
}

// TestWrappedScriptWithoutCommand: a script (sh -c, eval) whose command
// has no name (assignments or a redirection alone) is decided like any
// other line; looking for a computed name in it indexed an empty word
// list and panicked.
func TestWrappedScriptWithoutCommand(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{"bash -c 'X=1'", "sh -c '>out'", "eval X=1", "sudo sh -c 'X=1; rm -rf x'"} {
		want := Allow
		if strings.Contains(c, "rm") {
			want = Deny
		}
		if d := Decide(deny, shell, cmd(c)); d.Behavior != want {
			t.Errorf("deny rm:*, %q: %s (%s), want %s", c, d.Behavior, d.Reason, want)
		}
	}
}

// TestInputRedirectionTarget: the file a command reads (<, <<<) is a
// word with quotes and substitutions, as the shell reads it; it was taken
// up to the next space or operator, so a quoted target with a space
// desynchronised the quotes ("cat <'a b';touch x;cat <'<'z" was one cat)
// and a substitution in it went unseen (cat <$(rm -rf x)): explore mode
// ran them and deny rules missed them.
func TestInputRedirectionTarget(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"cat <'a b';rm -rf x;cat <'<'z",
		`cat <"a b";rm -rf x;cat <"<"z`,
		"cat <$(rm -rf x)",
		"cat < \"$(rm -rf x)\"",
		"grep y <<< \"a b\"; rm -rf x",
	} {
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{`wc -l < "my file.txt"`, `grep foo <<< "some text"`, "sort <in.txt", "cat 0<'a b' | head"} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
}

// TestHereDocuments: the body of a here-document is data, not commands:
// it ends at its delimiter's line, its quotes are not the shell's, and
// only an unquoted delimiter's body runs substitutions. Read as commands,
// two bodies with an apostrophe each hid the command between them from
// deny rules in bypass mode, and a body with one made the line
// unparsable, which every deny and ask rule matches.
func TestHereDocuments(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"cat <<EOF\nit's\nEOF\nrm -rf x\ncat <<EOF\nit's\nEOF\n",
		"cat <<-EOF\n\tit's\n\tEOF\nrm -rf x\ncat <<EOF\nit's\nEOF",
		"cat <<EOF\n$(rm -rf x)\nEOF",
		"cat <<EOF\n`rm -rf x`\nEOF",
		"cat <<A; cat <<'B'\na\nA\nb\nB\nrm -rf x",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"cat > notes.md <<'EOF'\nIt's done: rm -rf is not run; $(neither)\nEOF",
		"git commit -F - <<EOF\nDon't stop\nEOF\n",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"cat <<'EOF'\nit's $(data)\nEOF", "cat <<\"EOF\"\n`rm -rf x`\nEOF"} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
	if shellReadOnly("cat <<EOF\n$(touch x)\nEOF") {
		t.Error("cat of a here-document with a substitution is read-only")
	}
}

// TestSubstitutionEndsAsTheShellReads: a ")" in a comment or a
// here-document inside $(…) does not end it, as the shell reads it; it
// did here, and the rest of the substitution was read as the outer line,
// where a quote from the comment or the body hid the next command.
func TestSubstitutionEndsAsTheShellReads(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"echo $(true # ) it's\nrm -rf x\n) \"' #\"",
		"echo $(cat <<EOF\n) it's\nEOF\n); rm -rf x; echo \"' #\"",
		"echo $(cat <<'E F'\n) it's\nE F\n); rm -rf x; echo \"' #\"",
		"echo $(cat <<-EOF\n) it's\n\tEOF\n); rm -rf x; echo \"' #\"",
		"echo $(case x in *)#'\nrm -rf x\n;; esac) \"' #\"",
		"echo $(case \"a b\" in *)#'\nrm -rf x\n;; esac) \"' #\"",
		"case x in *)#'\nrm -rf x\n;; esac #'",
		"(( y = 1 << 2 ))\nrm -rf x\n2",
		"echo $( (( y = 1 << 2 ))\n) ; cat <<X\n2\n) it's\nX\nrm -rf x\necho \"' #\"",
		"for ((i=0; i<1<<3; i++)); do :; done\nrm -rf x\n3",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"echo $(echo $# a#b ${#x})", "echo $(cat <<EOF\n(\nEOF\n)", "echo $(cat <<< x)",
		"echo $((1<<2)) $(echo $((1<<2))#x)", "(ls)#'", "echo $(echo a)#'b'", "echo $(echo in case of x)"} {
		if _, err := parseShell(c); err != nil {
			t.Errorf("parseShell(%q): %v", c, err)
		}
	}
}

// TestHereDocumentScripts: a here-document's body may be a script (bash
// <<EOF, cat <<EOF | sh): deny and ask rules and the removal check see
// the commands it would run, as they did when it was read as commands,
// without its prose making the line unparsable.
func TestHereDocumentScripts(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"bash <<'EOF'\nrm -rf x\necho it's\nEOF",
		"cat <<EOF | sh\nrm -rf x\nEOF",
		"sh <<A\ncat <<B\nB\nsudo rm -rf x\nA",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if d := Decide(Policy{Mode: ModeBypass}, shell, cmd("bash <<'EOF'\nrm -rf ~\nEOF")); d.Behavior != Allow {
		t.Errorf("bypass, rm -rf ~ in a here-document: %s (%s)", d.Behavior, d.Reason)
	}
	if d := Decide(Policy{}, shell, cmd("bash <<'EOF'\nrm -rf ~\nEOF")); d.Behavior != Ask || !d.Safety {
		t.Errorf("rm -rf ~ in a here-document: %s (%s), want a safety ask", d.Behavior, d.Reason)
	}
	if !shellReadOnly("cat <<'EOF'\nrm -rf x\nEOF") {
		t.Error("cat of a here-document is not read-only")
	}
	nested := "echo x"
	for range 20 {
		nested = "sh <<EOF\n" + nested + "\nEOF"
	}
	if _, err := parseShell(nested); !errors.Is(err, errTooDeep) {
		t.Errorf("20 nested here-documents: %v, want %v", err, errTooDeep)
	}
}
