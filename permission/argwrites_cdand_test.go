package permission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWritesAfterCdAnd: every cd was taken as possibly failed, so a
// relative path written after it was checked in the directory before
// the cd too, and "cd sub && make && cd .. && ls > f" (whose f was also
// taken as the working directory's parent's) and "cd sub && rm -rf
// ../build" asked. A command
// joined by && to a literal cd before it now runs only where that cd
// led; a command that may run after a cd failed (;, ||, a newline, &),
// or one the cd does not reach (a pipeline's, a subshell's, a group's
// other than its last, another shell's, eval's), is still checked in the directory before
// it too, and so is every command of a line that may not run the
// shell's own cd (a function or an alias named cd, a trap, a sourced
// file, shopt, enable, CDPATH set by an expanded name).
func TestWritesAfterCdAnd(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "cd", "pushd", "popd", "make", "ls", "rm", "sort", "tee", "go test", "cp", "touch",
		"mkdir", "git diff", "true", "eval", "bash", "trap", "shopt", "enable", "alias", "export", "source", ".", "echo",
		"cd()", "function", "}", ":", "(cd", "(", "{", "!", "[[")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd sub && make && cd .. && ls > f",
		"cd sub && rm -rf ../build",
		"cd sub && make > ../build.log 2>&1",
		"cd sub 2>/dev/null && ls > ../f",
		"cd sub/deep && go test ./... 2>&1 | tee ../../out.txt",
		"cd sub && cp a.txt ../backup/",
		"cd sub && cd deep && touch ../../stamp",
		"cd " + wd + "/sub && ls > ../f",
		"mkdir -p sub/out && cd sub/out && sort -o ../sorted.txt in.txt",
		"pushd sub && make > ../build.log && popd",
		"cd sub && git diff > ../changes.patch",
		"cd sub; cd deep && ls > ../f", // from here, or sub: deep's parent either way
		"{ cd sub; } && ls > ../f",     // the group's status is its cd's
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"cd sub; ls > ../f",
		"cd sub\nls > ../f",
		"cd sub || true; ls > ../f",
		"cd sub || ls > ../f",
		"cd sub && make || ls > ../f", // ls runs after cd failed too
		"true || cd sub && ls > ../f", // cd does not run when true succeeds
		"cd sub | ls > ../f",
		"ls | cd sub && ls > ../f",
		"cd sub & ls > ../f",
		"cd sub other && ls > ../f",
		"( cd sub ) && ls > ../f",
		"(cd sub) && ls > ../f",
		"! cd sub && ls > ../f",
		"eval 'cd sub; true' && ls > ../f",
		"bash -c 'cd sub' && ls > ../f",
		"cd() { :; }; cd sub && ls > ../f",
		"function cd { :; }; cd sub && ls > ../f",
		"alias cd=:\ncd sub && ls > ../f",
		"source ./env.sh; cd sub && ls > ../f",
		". ./env.sh; cd sub && ls > ../f",
		"enable -n cd; cd sub && ls > ../f",
		"shopt -s cdable_vars; cd v && ls > ../f",
		"export X=CDP; export ${X}ATH=..; cd sub && ls > ../f",
		"[[ a && cd ]] && ls > ../f",
		"echo ${x:-; cd sub && } && ls > ../f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
		// The rules cover the line writing inside: it is the write
		// that asks. (Not with CDPATH set by an expanded name: cd sub
		// may go to ../sub.)
		if strings.Contains(line, "${X}ATH") {
			continue
		}
		inside := strings.ReplaceAll(line, "../f", "f")
		if d := Decide(p, shell, cmd(inside)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", inside, d.Behavior, d.Reason)
		}
	}
	// Lines that ask for more, whose last command's f is still checked
	// in the shell's own directory: a trap runs its cd before each
	// command, a function is a substitution's too, pushd -n stays, a
	// command the shell names (eval's too) may be alias or function.
	for _, line := range []string{
		"trap 'cd ..' DEBUG; cd sub && ls > f",
		"cd() { :; }; echo $(cd sub && ls > f)",
		"echo $(cd() { :; }; cd sub && ls > f)",
		"eval \"$CMD\"; cd sub && ls > f",
		"pushd -n sub && ls > f",
		"$E 'alias cd=:'\ncd sub && ls > f",
		"ev?l 'function cd { :; }'; cd sub && ls > f",
	} {
		l, err := parseShell(line)
		if last := l.cmds[len(l.cmds)-1]; err != nil || !slices.Contains(writtenPaths(last), "f") {
			t.Errorf("%q: %s writes %q (error %v), want f in the shell's own directory too", line, last.text(), writtenPaths(last), err)
		}
	}
}
