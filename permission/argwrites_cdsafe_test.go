package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// cdSafePolicy is a workspace with a directory sub (and sub/deep), a
// directory outside it, and allow rules naming every command the lines
// of the tests below run.
func cdSafePolicy(t *testing.T) (p Policy, other string) {
	t.Helper()
	wd := t.TempDir()
	other = t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "cd", "echo", "exit", "set", "builtin", "npm", "true", "false", "ls", "cat",
		"{", "}", "(cd", "(set", "(", "!", "f()", "function", "if", "then", "fi", "while", "do", "done", "eval")
	return Policy{Rules: rules, WorkingDirs: []string{wd}}, other
}

// checkLines fails for each of allow that is not allowed and each of ask
// that is not an ask (and no safety ask).
func checkLines(t *testing.T, p Policy, allow, ask []string) {
	t.Helper()
	for _, line := range allow {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range ask {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
}

// TestWriteAfterCdAndNewline: the shell reads the command after "&&"
// (or "||", "|") on the next line as joined to it, but the newline was
// taken as ending the list, so "cd sub &&" and a newline before "echo
// hi > ../out.txt" was checked where the cd may have failed too, and
// asked though it writes ./out.txt; the operator now joins the command
// after the newline (and blank or comment lines), as a backslash before
// the newline does. "cd sub;" and a newline, or a newline alone, still
// end the list.
func TestWriteAfterCdAndNewline(t *testing.T) {
	p, _ := cdSafePolicy(t)
	checkLines(t, p, []string{
		"cd sub &&\necho hi > ../out.txt",
		"cd sub &&\n\n  echo hi > ../out.txt",
		"cd sub && # into sub\necho hi > ../out.txt",
		"cd sub && \\\necho hi > ../out.txt",
		"cd sub/deep &&\ncd .. &&\necho hi > ../out.txt",
	}, []string{
		"cd sub\necho hi > ../out.txt",
		"cd sub;\necho hi > ../out.txt",
		"cd sub ||\necho hi > ../out.txt",
		"cd sub &&\ntrue ||\necho hi > ../out.txt",
		"cd sub &\necho hi > ../out.txt",
		"cd sub |\ncat && echo hi > ../out.txt",
	})
}

// TestWriteAfterCdInGroup: "{ cd sub; } && echo hi > ../out.txt" asked
// though the group's status is its cd's, so the echo runs only in sub
// and writes ./out.txt; a command joined by && (or the || list after it)
// to a group whose last command is a literal cd runs only where that
// cd led now. A group whose cd may have failed (another command after
// it, in the background), or one run in a subshell (in a pipeline),
// still asks.
func TestWriteAfterCdInGroup(t *testing.T) {
	p, other := cdSafePolicy(t)
	checkLines(t, p, []string{
		"{ cd sub; } && echo hi > ../out.txt",
		"{ cd sub; } && echo hi > out.txt",
		"{ cd sub/deep; } && { cd ..; } && echo hi > ../out.txt",
		"{ builtin cd sub; } && echo hi > ../out.txt",
		"{ true; cd sub; } && echo hi > ../out.txt",
	}, []string{
		"{ cd " + other + "; } && echo hi > out.txt",
		"{ cd sub; true; } && echo hi > ../out.txt",
		"{ cd sub && true; } || echo hi > ../out.txt",
		"{ cd sub; } || echo hi > ../out.txt",
		"{ cd sub & } && echo hi > ../out.txt",
		"{ cd sub; } | cat && echo hi > ../out.txt",
		"cat | { cd sub; } && echo hi > ../out.txt",
		"{ cd sub; }; echo hi > ../out.txt",
		"{ ! cd sub; } && echo hi > ../out.txt",
		"{ cd sub; } & echo hi > ../out.txt",
		"function f { cd sub; } && echo hi > ../out.txt",
		"f() { cd sub; } && echo hi > ../out.txt",
		"} && echo hi > ../out.txt",
	})
}

// TestWriteAfterCdOrExit: "cd sub || exit 1; echo hi > ../out.txt"
// asked though the shell goes on only when the cd succeeded, so the
// echo writes ./out.txt; after a list ending with "|| exit" the
// commands now run only where the shell is when the list succeeded.
// Where exit may not end the shell (in a subshell, a pipeline, the
// background, a compound command, with more than one argument or a
// redirection that may fail) or the list may succeed where its cd
// failed (! cd, || echo, || true), the line still asks, and so does
// a line with the cd leading outside.
func TestWriteAfterCdOrExit(t *testing.T) {
	p, other := cdSafePolicy(t)
	checkLines(t, p, []string{
		"cd sub || exit 1; echo hi > ../out.txt",
		"cd sub || exit 1; echo hi > out.txt",
		"cd sub || exit; echo hi > ../out.txt",
		"cd sub/deep || exit 1\necho hi > ../../out.txt",
		"cd sub && cd deep || exit 1; echo hi > ../../out.txt",
		"cd sub || exit 1; cd deep || exit 1; echo hi > ../../out.txt",
		"cd sub || exit 1 && echo hi > ../out.txt",
		"cd sub && npm test || exit 1; cd .. && npm test",
		"cd sub || exit 1; cd .. && npm test",
		"cd sub || true; echo hi > out.txt", // here or in sub: inside either way
	}, []string{
		"cd " + other + " || exit 1; echo hi > out.txt",
		"cd sub || true; echo hi > ../out.txt",
		"cd sub || echo failed || exit 1; echo hi > ../out.txt",
		"! cd sub || exit 1; echo hi > ../out.txt",
		"cd sub && exit 1; echo hi > ../out.txt",
		"cd sub || exit 1 2; echo hi > ../out.txt",
		"cd sub || exit 1 < missing.txt; echo hi > ../out.txt",
		"cd sub || exit $X; echo hi > ../out.txt",
		"cd sub || exit 1 | cat; echo hi > ../out.txt",
		"cd sub || exit 1 & echo hi > ../out.txt",
		"cd sub | cat || exit 1; echo hi > ../out.txt",
		"true | cd sub || exit 1; echo hi > ../out.txt",
		"(cd sub || exit 1); echo hi > ../out.txt",
		"true | { cd sub || exit 1; }; echo hi > ../out.txt",
		"if false; then cd sub || exit 1; fi; echo hi > ../out.txt",
		"while false; do cd sub || exit 1; done; echo hi > ../out.txt",
		"f() { cd sub || exit 1; }; echo hi > ../out.txt",
		"function f { cd sub || exit 1; }; echo hi > ../out.txt",
		"eval 'cd sub || exit 1'; echo hi > ../out.txt",
		"cd sub && npm test; cd .. && npm test", // where cd sub failed, cd .. leaves
	})
}

// TestWriteAfterCdUnderErrexit: "set -e; cd sub; echo hi > ../out.txt"
// asked though with errexit on a cd that fails ends the shell, so the
// echo runs only in sub and writes ./out.txt; after set -e (-eu, -o
// errexit, …) a cd standing alone in its list now leads the commands
// after it only where it led. Where errexit may be off (never set, set
// in a pipeline, the background, a function or after a list that may
// fail, turned off by set +e or a script the line runs), or does not
// end the shell for that cd (in an && or || list, after !, in an if's
// condition, in a pipeline or the background), the line still asks.
func TestWriteAfterCdUnderErrexit(t *testing.T) {
	p, other := cdSafePolicy(t)
	checkLines(t, p, []string{
		"set -e; cd sub; echo hi > ../out.txt",
		"set -e; cd sub; echo hi > out.txt",
		"set -e\ncd sub\necho hi > ../out.txt",
		"set -eu; cd sub; echo hi > ../out.txt",
		"set -euo pipefail; cd sub; echo hi > ../out.txt",
		"set -o errexit; cd sub; echo hi > ../out.txt",
		"set -e -x; cd sub; echo hi > ../out.txt",
		"set -e; set -x; cd sub; echo hi > ../out.txt",
		"set -e; cd sub; cd deep; echo hi > ../../out.txt",
		"set -e; cd sub; npm test; cd ..; npm test",
		"cd sub; echo hi > out.txt", // here or in sub: inside either way
	}, []string{
		"set -e; cd " + other + "; echo hi > out.txt",
		"cd sub; echo hi > ../out.txt",
		"cd sub; set -e; echo hi > ../out.txt",
		"set -e; set +e; cd sub; echo hi > ../out.txt",
		"set -e; set +o errexit; cd sub; echo hi > ../out.txt",
		"set -e; set -x +e; cd sub; echo hi > ../out.txt",
		"set -e; eval 'set +e'; cd sub; echo hi > ../out.txt",
		"set -e; builtin set +e; cd sub; echo hi > ../out.txt",
		"set -- -e; cd sub; echo hi > ../out.txt",
		"set -e < missing.txt; cd sub; echo hi > ../out.txt",
		"false && set -e; cd sub; echo hi > ../out.txt",
		"set -e | cat; cd sub; echo hi > ../out.txt",
		"set -e & cd sub; echo hi > ../out.txt",
		"f() { set -e; }; cd sub; echo hi > ../out.txt",
		"function f { set -e; }; cd sub; echo hi > ../out.txt",
		"set -e; cd sub || true; echo hi > ../out.txt",
		"set -e; cd sub && true; echo hi > ../out.txt",
		"set -e; ! cd sub; echo hi > ../out.txt",
		"set -e; if cd sub; then true; fi; echo hi > ../out.txt",
		"set -e; cd sub | cat; echo hi > ../out.txt",
		"set -e; cd sub & echo hi > ../out.txt",
		"set -e; (cd sub); echo hi > ../out.txt",
		"set -e; cd sub && npm test; cd .. && npm test", // cd sub && … may fail and go on
	})
}

// TestWriteInSubshellAfterCd: "(cd sub && echo hi > ../out.txt)" asked
// though inside the subshell the echo runs only where the cd led, and
// writes ./out.txt; a line that is one subshell is now read as its
// commands on their own, the cds being the subshell's and nothing
// running after it. A cd in a subshell still leads nothing after it
// ("(cd sub) && echo hi > ../out.txt" writes ../out.txt), and a write
// inside the subshell that leaves the workspace still asks.
func TestWriteInSubshellAfterCd(t *testing.T) {
	p, other := cdSafePolicy(t)
	checkLines(t, p, []string{
		"(cd sub && echo hi > ../out.txt)",
		"( cd sub && echo hi > ../out.txt )",
		"(cd sub/deep && cd .. && echo hi > ../out.txt)",
		"(cd sub || exit 1; echo hi > ../out.txt)",
		"(set -e; cd sub; echo hi > ../out.txt)",
		"(cd sub && npm test)",
	}, []string{
		"(cd sub && echo hi > ../../out.txt)",
		"(cd " + other + " && echo hi > out.txt)",
		"(cd sub; echo hi > ../out.txt)",
		"(cd sub || true; echo hi > ../out.txt)",
		"(cd sub) && echo hi > ../out.txt",
		"(cd sub); echo hi > ../out.txt",
		"(cd sub) && (echo hi > ../out.txt)",
		"(cd sub && true) | (echo hi > ../out.txt)",
		"((cd sub) && echo hi > ../out.txt)",
		"(cd sub && echo hi > ../out.txt) > ../log.txt",
		"(cd sub && echo hi > ../out.txt) && echo hi > ../x.txt",
	})
}

// TestQuotedBraceIsNoGroup: a "}" or "{" the shell does not read as a
// reserved word (quoted, escaped, after an assignment or a
// redirection) is a command, which "hash -p ./ok.sh }" or a PATH of the
// workspace's makes one that succeeds; it was taken as the group's
// brace, so "{ cd nosuch; '}' && echo hi > ../out.txt; }" was read as
// the group's cd leading the echo, and allowed though where the cd
// fails the echo writes ../out.txt. Only an unquoted brace standing
// first in its command closes (or opens) a group now.
func TestQuotedBraceIsNoGroup(t *testing.T) {
	p, _ := cdSafePolicy(t)
	p.Rules = append(p.Rules, shellAllowRules(t, "hash", "export")...)
	checkLines(t, p, []string{
		"hash -p ./ok.sh x; { cd sub; } && echo hi > ../out.txt",
		"{ cd sub; } 2>/dev/null && echo hi > ../out.txt",
	}, []string{
		"hash -p ./ok.sh }; { cd sub; '}' && echo hi > ../out.txt; }",
		"hash -p ./ok.sh }; { cd sub; \"}\" && echo hi > ../out.txt; }",
		"hash -p ./ok.sh }; { cd sub; \\} && echo hi > ../out.txt; }",
		"hash -p ./ok.sh }; { cd sub; X= } && echo hi > ../out.txt; }",
		"hash -p ./ok.sh }; { cd sub; >/dev/null } && echo hi > ../out.txt; }",
		"hash -p ./ok.sh }; { cd sub; >&2 } && echo hi > ../out.txt; }",
		"hash -p ./ok.sh }; { cd sub; <<<x } && echo hi > ../out.txt; }",
		"export PATH=bin:/usr/bin:/bin; { cd sub; \\} && echo hi > ../out.txt; }",
		"hash -p ./ok.sh {; { '{' cd sub; } && echo hi > ../out.txt",
		"hash -p ./ok.sh {; { \\{ cd sub; } && echo hi > ../out.txt",
		"hash -p ./ok.sh {; >&2 { cd sub; } && echo hi > ../out.txt",
	})
}

// TestWriteAfterCdUnderFailedSet: bash's set turns on no option when
// one of its arguments is not an option it takes (-Z, -i, -c, -s, -o
// bogus), and the shell goes on; "set -Ze; cd nosuch; echo hi >
// ../out.txt" was read as turning errexit on, and allowed though the
// echo runs where the cd failed and writes ../out.txt. errexit is on
// now only after a set whose every option is one set takes.
func TestWriteAfterCdUnderFailedSet(t *testing.T) {
	p, _ := cdSafePolicy(t)
	checkLines(t, p, []string{
		"set -euxo pipefail; cd sub; echo hi > ../out.txt",
		"set -eE -o nounset; cd sub; echo hi > ../out.txt",
	}, []string{
		"set -Ze; cd sub; echo hi > ../out.txt",
		"set -e -Z; cd sub; echo hi > ../out.txt",
		"set -ei; cd sub; echo hi > ../out.txt",
		"set -e -c; cd sub; echo hi > ../out.txt",
		"set -es; cd sub; echo hi > ../out.txt",
		"set -e -l; cd sub; echo hi > ../out.txt",
		"set -o bogus -e; cd sub; echo hi > ../out.txt",
	})
}

// TestWriteAfterExitOrSetWithDescriptor: a redirection that duplicates
// a descriptor not open (>&5, 2>&9, <&7) fails, and the command does
// not run; it was not taken as one that may fail, as it names no file,
// so "cd nosuch || exit 1 >&5; echo hi > ../out.txt" and "set -e >&5;
// cd nosuch; echo hi > ../out.txt" were allowed though the exit (or
// set) did not run and the echo wrote ../out.txt. An exit or set with
// any redirection is now taken as one that may not run.
func TestWriteAfterExitOrSetWithDescriptor(t *testing.T) {
	p, _ := cdSafePolicy(t)
	checkLines(t, p, []string{
		"cd sub || exit 1; echo hi > ../out.txt",
		"set -e; cd sub; echo hi > ../out.txt",
	}, []string{
		"cd sub || exit 1 >&5; echo hi > ../out.txt",
		"cd sub || exit 1 2>&9; echo hi > ../out.txt",
		"cd sub || exit 1 <&7; echo hi > ../out.txt",
		"cd sub || exit >&5; echo hi > ../out.txt",
		"cd sub || exit 1 3>&4; echo hi > ../out.txt",
		"set -e >&5; cd sub; echo hi > ../out.txt",
		"set -e 2>&9; cd sub; echo hi > ../out.txt",
		"set -e <&7; cd sub; echo hi > ../out.txt",
		"set -euo pipefail 1>&8; cd sub; echo hi > ../out.txt",
	})
}
