package permission

import (
	"slices"
	"testing"
)

// TestSedAwkProgramWrites: "sed:*" and "awk:*" allowed a sed script's w
// and W commands and s///w, and an awk program's print and printf
// redirections, writing outside the working directories ("sed 'w
// /srv/x' f", "sed -e 's/a/b/w /srv/x' f", "awk '{print >
// \"/srv/x\"}' f"), where the same write through a shell redirection
// asks, and one on a dangerous path was no safety ask; those files are
// now writes, and an awk redirection to a file its program computes
// ("print > $1") is one to a place not known here, outside. So are
// the files gawk's -o (--pretty-print), -p (--profile) and -d
// (--dump-variables) write.
func TestSedAwkProgramWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "sed", "gsed", "awk", "gawk")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"sed 'w " + out + "' a.txt",
		"sed -n '/err/w " + out + "' a.txt",
		"sed -n '/err/W " + out + "' a.txt",
		"sed -e 's/a/b/w " + out + "' a.txt",
		"sed -e 's/a/b/gw " + out + "' a.txt",
		"sed --expression='s|a|b|w " + out + "' a.txt",
		"sed -e p -e 'w " + out + "' a.txt",
		"sed 's/a/b/\nw " + out + "' a.txt",
		"sed '/x/{w " + out + "\n}' a.txt",
		"sed -i 's/a/b/;w " + out + "' a.txt",
		"gsed 'w " + out + "' a.txt",
		"awk '{print > \"" + out + "\"}' a.txt",
		"awk '{print >> \"" + out + "\"}' a.txt",
		"awk '/err/ {print $1, $2 > \"" + out + "\"}' a.txt",
		"awk '{printf \"%s\\n\", $0 > \"" + out + "\"}' a.txt",
		"awk '{printf(\"%s\\n\", $0) >> \"" + out + "\"}' a.txt",
		"awk '{print > $1}' a.txt",
		"awk '{print > ($1 \".txt\")}' a.txt",
		"awk '{f = \"x\"; print > f}' a.txt",
		"awk -F: '{print $1 > \"" + out + "\"}' a.txt",
		"gawk -e 'END {print NR > \"" + out + "\"}' a.txt",
		"awk '{print > \"" + out + "\"; print > \"b.txt\"}' a.txt",
		"gawk -o" + out + " '{print}' a.txt",
		"gawk --pretty-print=" + out + " '{print}' a.txt",
		"gawk -p" + out + " '{print}' a.txt",
		"gawk --profile=" + out + " '{print}' a.txt",
		"gawk --prof=" + out + " '{print}' a.txt",
		"gawk -d" + out + " '{print}' a.txt",
		"gawk -F: -d" + out + " -e '{print}' a.txt",
		"gawk --dump-variables=" + out + " '{print}' a.txt",
		"awk -v x=1 -p" + out + " '{print}' a.txt",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
		if len(d.Suggested) > 0 {
			t.Errorf("%q: suggested %v, want none", line, d.Suggested)
		}
	}
	for _, line := range []string{
		"sed -n 'w ~/.bashrc' a.txt",
		"sed 's/a/b/w ~/.ssh/authorized_keys' a.txt",
		"awk '{print > \"/etc/passwd\"}' a.txt",
	} {
		if d := Decide(p, shell, cmd(line)); !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"sed 's/a/b/' a.txt",
		"sed -n '/err/w errors.txt' a.txt",
		"sed -e 's/a/b/w changed.txt' a.txt",
		"sed -n 'w /dev/stdout' a.txt",
		"sed 's/w/x/g' a.txt",
		"sed -n '/w/p' a.txt",
		"sed -e 'y/abc/xyz/' -e '/x/r other.txt' a.txt",
		"awk '{print $1}' a.txt",
		"awk '$3 > 10 {print $1}' a.txt",
		"awk '{if ($1 > $2) print $1}' a.txt",
		"awk '{print ($1 > $2)}' a.txt",
		"awk '{print > \"out.txt\"}' a.txt",
		"awk '{print $2 >> \"logs/b.txt\"}' a.txt",
		"awk '{print > \"/dev/stderr\"}' a.txt",
		"awk 'NR > 1 {printf \"%s\\n\", $0 > \"out.txt\"}' a.txt",
		"awk -v n=2 'n > 1' a.txt",
		"gawk -p '{print}' a.txt",
		"gawk --profile=prof.out '{print}' a.txt",
		"gawk -d '{print}' a.txt",
		"gawk -v out=x '{print}' a.txt",
		"awk 'BEGIN {while ((getline line < \"in.txt\") > 0) n++; print n}'",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}

// TestAwkWritesAfterRegexTarget: after a redirection's ">" awkWrites
// kept the token before it as an operand, so a regular expression as
// its target (print $1 > /"/, which awk writes to a file named 0 or 1)
// was read as a division and its quote as opening a string, which hid
// the redirections after it; awkRuns, which reads ">" as an operator,
// did see them. "execute_shell_command:*" then allowed a write to
// /etc/passwd that is a safety ask when written plainly.
func TestAwkWritesAfterRegexTarget(t *testing.T) {
	prog := `{print $1 > /"/; print > "/etc/passwd"; s = "\""}`
	if got, want := awkWrites(prog), []string{unknownFile, "/etc/passwd"}; !slices.Equal(got, want) {
		t.Errorf("awkWrites(%q) = %q, want %q", prog, got, want)
	}
	p := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{t.TempDir()}}
	line := "awk '" + prog + "' a.txt"
	if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
		t.Errorf("%q: %s (%s, safety %v), want a safety ask", line, d.Behavior, d.Reason, d.Safety)
	}
}

// TestSedRegexBracketHoldsDelimiter: GNU sed reads a bracket expression
// in a regular expression whole, the delimiter in it a character as any
// other ("s/[/]/x/" replaces a "/"), but sed's scripts were read as if
// the "/" in "[/]" ended the expression, so "s/[/]/;a/w FILE", which
// writes FILE, was read as s/[/]/ and a command appending text: "sed:*"
// allowed it with FILE outside or dangerous, and ACCEPT_EDITS allowed
// it with sed -i, as it did "/[/!a]/w FILE" and "s/[/]/;a/e", which
// runs the lines as commands.
func TestSedRegexBracketHoldsDelimiter(t *testing.T) {
	wd := t.TempDir()
	out := t.TempDir() + "/x"
	p := Policy{Rules: shellAllowRules(t, "sed"), WorkingDirs: []string{wd}}
	edits := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	for _, script := range []string{
		"s/[/]/;a/w " + out,
		"s/[]/]/;a/w " + out,
		"s/[^]/]/;a/w " + out,
		"s/[[:alpha:]/]/;a/w " + out,
		"s|[|]|;a|w " + out,
		"/[/!a]/w " + out,
		`\%[%!a]%w ` + out,
		"s/[/]/;a/e",
		"/[/!a]/e touch x",
	} {
		line := "sed '" + script + "' a.txt"
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
		line = "sed -i '" + script + "' " + wd + "/a.txt"
		if d := Decide(edits, shell, cmd(line)); d.Behavior == Allow {
			t.Errorf("accept_edits %q: allowed (%s)", line, d.Reason)
		}
	}
	line := "sed 's/[/]/;#/w ~/.bashrc' a.txt"
	if d := Decide(p, shell, cmd(line)); !d.Safety {
		t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
	}
	for _, line := range []string{
		"sed 's/[/]/_/g' a.txt",
		"sed -n '/[/]/p' a.txt",
		"sed 's/[^]/]*//' a.txt",
		"sed 's/[[:space:]/]*$//' a.txt",
		"sed 's/[/]/;a text/' a.txt",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}

// TestAwkRegexBracket: awk reads a bracket expression in a regular
// expression whole, a "]" first in it (after "^") one of its characters
// and a class such as [:alpha:] ending at its ":]", so /[]/"]/ and
// /[[:alpha:]/"]/ match a "]", "/" or '"'; awkTokens ended them at that
// first "]", took the quote after as opening a string and so hid the
// rest of the program: "awk:*" allowed a system() or a pipe to a
// command after one, and a write to /etc/passwd was no safety ask.
func TestAwkRegexBracket(t *testing.T) {
	p := Policy{Rules: shellAllowRules(t, "awk"), WorkingDirs: []string{t.TempDir()}}
	for _, re := range []string{`/[]/"]/`, `/[^]/"]/`, `/[[:alpha:]/"]/`, `/[\]/"]/`} {
		for _, rest := range []string{`system("sh")`, `print | "sh"`, `"sh" | getline`} {
			line := "awk '{x = " + re + "; " + rest + `; s = "\""}' a.txt`
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
				t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
			}
		}
		line := "awk '{x = " + re + `; print > "/etc/passwd"; s = "\""}' a.txt`
		if d := Decide(p, shell, cmd(line)); !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		`awk '/[]/]/ {print}' a.txt`,
		`awk '{gsub(/[[:space:]/]+/, "_"); print > "out.txt"}' a.txt`,
		`awk '$1 ~ /^[^]/]+$/' a.txt`,
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
