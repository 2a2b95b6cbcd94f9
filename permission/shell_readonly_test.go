package permission

import (
	"slices"
	"strings"
	"testing"
)

// TestReadOnlyExcludesCodeAndWrites: lines bash runs code or writes files
// for, through commands the engine takes as read-only, are not read-only
// (read-only lines run without asking in every mode, explore included).
func TestReadOnlyExcludesCodeAndWrites(t *testing.T) {
	for _, c := range []string{
		`echo '$(touch p)' >/dev/null; echo ${_@P}`, // prompt expansion runs $_'s command substitution
		`echo "${_@P}"`,
		`test -v 'a[$(touch p)]'`, // an array subscript is evaluated: its $() runs
		`[ -v 'a[$(touch p)]' ]`,
		`printf -v 'a[$(touch p)]' x`,
		`printf -v x '%s' y`,
		`cat <> /home/u/new`,               // <> opens for writing, creating the file
		`sort --o=/home/u/.bashrc in`,      // GNU long options may be abbreviated
		`sort --output=/home/u/.bashrc in`, // and take their value after "="
		`sort -S 1 --compress-program=sh in`,
		`sort --comp=sh in`,
		`date --set=2020-01-01`,
		`date --se 2020-01-01`,
		`date -us 2020-01-01`,
		`hostname --file=/tmp/name`,
		`hostname -F /tmp/name`,
		`file -C -m magic`,
		`file --compile -m magic`,
		`tree -R -L 1 -H .`, // writes 00Tree.html in each directory
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		`echo "${HOME}" ${PWD}`,
		`test -f go.mod && test -d .git`,
		`printf '%s\n' a b`,
		`cat < in.txt`,
		`sort -u -k2 in`,
		`date -u +%s`,
		`hostname -f`,
		`hostname --short`,
		`file -b go.mod`,
	} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
}

// TestShellEnvAssignments: VAR=value before a command (or alone) changes
// what runs (LD_PRELOAD, PATH, GIT_EXTERNAL_DIFF, NODE_OPTIONS): such a
// command is not read-only, not an edit ACCEPT_EDITS takes, and an allow
// rule must name the assignments too; deny and ask rules still match the
// command without them.
func TestShellEnvAssignments(t *testing.T) {
	wd := t.TempDir()
	for _, c := range []string{
		"LD_PRELOAD=/tmp/evil.so cat go.mod",
		"PATH=/tmp/evil; ls",
		"GIT_EXTERNAL_DIFF=/tmp/evil git diff",
	} {
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if d := Decide(Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}, shell, cmd("LD_PRELOAD=./evil.so touch x")); d.Behavior == Allow {
		t.Errorf("accept_edits LD_PRELOAD=… touch inside: allowed (%s)", d.Reason)
	}
	allowNPM := Policy{Rules: []Rule{rule(t, "execute_shell_command:npm test:*", Allow)}}
	if d := Decide(allowNPM, shell, cmd("NODE_OPTIONS=--require=/tmp/evil.js npm test")); d.Behavior != Ask {
		t.Errorf("allow npm test:*, NODE_OPTIONS=… npm test: %s (%s), want ask", d.Behavior, d.Reason)
	}
	if d := Decide(allowNPM, shell, cmd("npm test -- -u")); d.Behavior != Allow {
		t.Errorf("allow npm test:*, npm test -- -u: %s (%s), want allow", d.Behavior, d.Reason)
	}
	// The suggested rules allow the line they were suggested for.
	line := "NODE_ENV=test npm test"
	d := Decide(Policy{}, shell, cmd(line))
	if d.Behavior != Ask || len(d.Suggested) == 0 {
		t.Fatalf("%q: %s, suggestions %v", line, d.Behavior, d.Suggested)
	}
	if d := Decide(Policy{Rules: d.Suggested}, shell, cmd(line)); d.Behavior != Allow {
		t.Errorf("%q with its suggested rules: %s (%s)", line, d.Behavior, d.Reason)
	}
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	if d := Decide(deny, shell, cmd("FOO=1 rm -rf x")); d.Behavior != Deny {
		t.Errorf("deny rm:*, FOO=1 rm: %s (%s), want deny", d.Behavior, d.Reason)
	}
}

// TestShellWordsTheShellRewrites: brace expansion and $-expansions change
// a command's words after the engine reads them, so a command whose
// arguments are checked (find -delete, sort -o, rg --pre) is not read-only
// with them, ACCEPT_EDITS does not take an edit it cannot see, a
// dangerous path hidden in braces is still a safety ask, and a deny rule
// sees the command the braces make.
func TestShellWordsTheShellRewrites(t *testing.T) {
	for _, c := range []string{
		"find . -name '*.go' -{delete,true}",
		"find . -name x ${x:--delete}",
		"find . -name x $'-delete'",
		`find . -name x "${x:--delete}"`,
		"sort {-o,in} /home/u/.bashrc",
		"rg --{pre,x}=/tmp/evil pattern",
	} {
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"echo {a,b}",
		"cat ${HOME}/notes.txt",
		"find . -name '*.{go,md}'",
		"git log --format='{%h}'",
	} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
	wd := t.TempDir()
	if d := Decide(Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}, shell, cmd("rm -rf {/root/.ssh,x}")); d.Behavior == Allow {
		t.Errorf("accept_edits rm -rf {/root/.ssh,x}: allowed (%s)", d.Reason)
	}
	allowCP := Policy{WorkingDirs: []string{wd}, Rules: []Rule{rule(t, "execute_shell_command:cp:*", Allow)}}
	for _, c := range []string{"cp evil {.bashrc,x}", "cp evil .{b..b}ashrc", "cp evil {" + wd + "/.git/hooks/pre-commit,x}"} {
		if d := Decide(allowCP, shell, cmd(c)); d.Behavior != Ask || !d.Safety {
			t.Errorf("allow cp:*, %q: %s (%s), want a safety ask", c, d.Behavior, d.Reason)
		}
	}
	if d := Decide(allowCP, shell, cmd("cp a {b,c}")); d.Behavior != Allow {
		t.Errorf("allow cp:*, cp a {b,c}: %s (%s), want allow", d.Behavior, d.Reason)
	}
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	if d := Decide(deny, shell, cmd("{rm,} -rf x")); d.Behavior != Deny {
		t.Errorf("deny rm:*, {rm,} -rf x: %s (%s), want deny", d.Behavior, d.Reason)
	}
}

// TestExpandBraces: brace expansion as bash does it, bounded.
func TestExpandBraces(t *testing.T) {
	for w, want := range map[string][]string{
		"{a,b}":        {"a", "b"},
		"x{a,b}y":      {"xay", "xby"},
		"{rm,}":        {"rm"},
		".{b..b}ashrc": {".bashrc"},
		"{1..3}":       {"1", "2", "3"},
		"{3..1}":       {"3", "2", "1"},
		"{1..10..4}":   {"1", "5", "9"},
		"{}":           {"{}"},
		"{x}":          {"{x}"},
		"a{b,{c,d}}":   {"ab", "ac", "ad"},
		"{a,b}{c,d}":   {"ac", "ad", "bc", "bd"},
	} {
		work := maxBraceWork
		got, ok := expandBraces(w, 256, &work)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("%q: %q %v", w, got, ok)
		}
	}
	for _, w := range []string{"{1..100000}", "{-9223372036854775808..9223372036854775807}", "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"} {
		work := maxBraceWork
		if _, ok := expandBraces(w, 256, &work); ok {
			t.Errorf("%q expanded", w)
		}
	}
}

// TestAcceptEditsSedScripts: ACCEPT_EDITS takes sed -i inside the working
// directories as an edit of its files, but a sed script can run commands
// (e, s///e) and write or read other files (w, s///w, r): only scripts
// that edit the files given, and given on the command line, are taken.
func TestAcceptEditsSedScripts(t *testing.T) {
	wd := t.TempDir()
	p := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	for _, c := range []string{
		"sed -i '1e touch /tmp/pwn' f",
		"sed -i 's/a/touch x/e' f",
		"sed -i 's/a/b/w /tmp/out' f",
		"sed -i '/a/w /tmp/out' f",
		"sed -i 'r /etc/shadow' f",
		"sed -i -f script.sed f",
		"sed -i --expression='s/a/b/' /home/other/notes.txt f", // --expression: both operands are edited
		"sed -i.bak/../../x 's/a/b/' f",                        // a backup suffix with "/" writes elsewhere
		`sed -i "s/a/$X/" f`,                                   // the shell makes the script
		"sed -i '1i\\\nheader\n1e touch /tmp/pwn' f",           // a command after the text's line
		"sed -i '$a footer\\\nmore\nw /tmp/out' f",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("accept_edits %q: allowed (%s)", c, d.Reason)
		}
	}
	for _, c := range []string{
		"sed -i 's/foo/bar/g' f",
		"sed -i -e 's|a/b|c\\|d|2' -e '/^#/d' f g",
		"sed -i.bak -E 's/(x+)$/\\1y/;3,$s/w/W/gI' f",
		"sed --in-place --expression='1d' f",
		"sed -i '1i\\header' f", // text to insert, append or change lines with
		"sed -i '$a footer' f",
		"sed -i '2c replaced; w not a file' f",
		"sed -i 'y/abc/xyz/' f",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("accept_edits %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}

// TestShellComments: a word starting with "#" comments out the rest of its
// line for the shell, quotes included; read as a word, the quote in
// "# it's" hid the next line's command inside a string.
func TestShellComments(t *testing.T) {
	c := "ls # it's\ntouch /tmp/pwn # '"
	if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
		t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
	}
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	if d := Decide(deny, shell, cmd("ls # it's\nrm -rf x # '")); d.Behavior != Deny {
		t.Errorf("deny rm:*, rm after a comment with a quote: %s (%s)", d.Behavior, d.Reason)
	}
	for line, want := range map[string][]string{
		"ls # it's\ntouch x # '": {"ls", "touch x"},
		"ls;#x\npwd":             {"ls", "pwd"},
		"echo a#b ${#x} '#'":     {"echo a#b ${#x} #"},
	} {
		l, err := parseShell(line)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		var got []string
		for _, c := range l.cmds {
			got = append(got, c.text())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: commands %q, want %q", line, got, want)
		}
	}
	for _, c := range []string{"ls # list", "git status #$(not run)"} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false", c)
		}
	}
}

// TestShellANSICQuotes: bash reads $'…' as one string with backslash
// escapes (\' is a quote inside it), sh (dash) as "$" and a plain
// single-quoted string. Either reading may run the command: a line is
// read-only only when it is in both, and rules see both readings'
// commands.
func TestShellANSICQuotes(t *testing.T) {
	for _, c := range []string{
		"echo $'\\'' ; touch /tmp/pwn #'",    // bash: echo "'"; touch …
		"echo $'\\'\ntouch /tmp/pwn\necho '", // sh: echo "$\"; touch …
	} {
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{"echo $'\\'' ; rm -rf x #'", "$'rm' -rf x", "$'\\x72m' -rf x"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if !shellReadOnly("echo $'a\\tb'") {
		t.Error("echo $'a\\tb' is not read-only")
	}
}

// TestANSICQuoteIsNoExpansion: a $'…' string is a word the line spells
// out, in bash (its escapes) and in sh (a "$" and a quoted string), so a
// read-only command whose arguments are checked stays read-only with one;
// the sh reading took its "$" for an expansion.
func TestANSICQuoteIsNoExpansion(t *testing.T) {
	for _, c := range []string{"sort -t $'\\t' -k2 file", "git log --format=$'%h\\t%s'", "find . -name $'a b'"} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
	for _, c := range []string{"sort -t $'\\t' -o out file", "find . $'-delete'", "sort $'--o=x' f"} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true, want false", c)
		}
	}
}

// TestBracesWithoutExpansion: "{" and "}" with no "," or ".." between
// them at their own level make no brace expansion (git's HEAD@{1}), even
// with a ".." outside them; they were taken for one, and
// git diff HEAD@{1}..HEAD@{0} was not read-only.
func TestBracesWithoutExpansion(t *testing.T) {
	for _, c := range []string{"git diff HEAD@{1}..HEAD@{0}", "git log main@{2}..main", "git log @{u}..@{push}"} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
	for _, c := range []string{"sort {-o,x}{1} f", "find . {x,-delete}", "find . -{a{b,c}}delete", "sort {-o,x}..{y} f"} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true, want false", c)
		}
	}
}

// TestPromptExpansionNested: ${NAME@P} runs the substitutions in NAME's
// value ($_ is the last word of the command before), also with a nested
// ${…} in a subscript (${_[${#i}]@P}), whose "}" came first and hid the
// @P; and telling it costs one pass over the line, however many "${" it
// has (each looked for its "}" to the end of the line).
func TestPromptExpansionNested(t *testing.T) {
	for _, c := range []string{
		"echo '$(touch x)'; echo ${_[${#i}]@P}",
		"echo '$(touch x)'; echo \"${_[${#i}]@P}\"",
		"echo '$(touch x)'; echo ${_@\\\nP}",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true, want false", c)
		}
	}
	// (A subscript, ${a[${#i}]}, reads a value as an expression: not
	// read-only, TestValuesEvaluatedAsExpressions.)
	for _, c := range []string{"echo ${HOME} \"${x:-y}\"", "cat ${a:-${#i}}"} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
	if shellReadOnly(strings.Repeat("echo ${x ", 200000)) {
		t.Error("a line of 200000 unterminated ${ is read-only")
	}
}

// TestBraceExpansionBounded: expanding a command's braces looks at a
// bounded number of characters: alternatives that are all empty make 2ⁿ
// words that are dropped and never reached the word limit ({,}×40 ran for
// days), and a word of many unclosed "{" was read to its end from each.
// Past the bound the command is a safety ask.
func TestBraceExpansionBounded(t *testing.T) {
	for _, c := range []string{"cp x " + strings.Repeat("{,}", 40), "cp {a,b}" + strings.Repeat("{", 1<<20)} {
		line, err := parseShell(c)
		if err != nil || len(line.cmds) != 1 {
			t.Fatalf("%.20q: %v", c, err)
		}
		if _, ok := expanded(line.cmds[0]); ok {
			t.Errorf("%.20q… expanded", c)
		}
		if d := Decide(Policy{Mode: ModeBypass}, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("bypass, %.20q…: %s (%s)", c, d.Behavior, d.Reason)
		}
		if d := Decide(Policy{}, shell, cmd(c)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%.20q…: %s (%s), want a safety ask", c, d.Behavior, d.Reason)
		}
	}
	if e, ok := expanded(simpleCmd{args: []string{"cp", "{,}{,}x", "{a,b}"}, braced: []string{"{,}{,}x", "{a,b}"}}); !ok || len(e.args) != 7 {
		t.Errorf("cp {,}{,}x {a,b}: %q %v", e.args, ok)
	}
}

// TestAcceptEditsSedScriptsJoined: sed joins its -e scripts with
// newlines, so text to append that ends in "\" goes on into the next
// ("sed -e '1a\' -e 'w x' f" appends a line "w x"), as sedRead, which
// reads what sed writes, took it; ACCEPT_EDITS read each script alone
// and asked for that edit of f as if it wrote x.
func TestAcceptEditsSedScriptsJoined(t *testing.T) {
	wd := t.TempDir()
	p := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	for _, c := range []string{
		"sed -i -e '1a\\' -e 'w not a file' f",
		"sed -i -e '$a footer\\' -e 'e not a command' f",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("accept_edits %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"sed -i -e '1a\\' -e 'w x' -e 'w /tmp/out' f",
		"sed -i -e 's/a/b/' -e 'w /tmp/out' f",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("accept_edits %q: allowed (%s)", c, d.Reason)
		}
	}
}
