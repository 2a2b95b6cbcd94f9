package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAllowRuleDoesNotCoverWritesOutside: an allow rule that names a
// command ("ls:*", "echo:*") allowed it with an output redirection to
// any file that is not a dangerous path ("ls > ~/notes/x", "echo x >>
// /srv/other/app.conf", "bash -c 'ls > /srv/other/x'"), where
// write_text_file asks for the same write outside the working
// directories; such a line now falls to the mode (asks in DEFAULT, denied
// in DONT_ASK, allowed in BYPASS), and no rule is suggested for it (a
// one-shot approval fits). A redirection inside the working directories
// (or, with none, below the shell's directory) and to /dev/null is
// covered by the command's rule as before; explore mode denies any
// redirection.
func TestAllowRuleDoesNotCoverWritesOutside(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Symlink(other, filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	rules := []Rule{
		rule(t, "execute_shell_command:ls:*", Allow), rule(t, "execute_shell_command:echo:*", Allow),
		rule(t, "execute_shell_command:bash:*", Allow), rule(t, "execute_shell_command:make:*", Allow),
	}
	withDirs := Policy{Rules: rules, WorkingDirs: []string{wd}}
	noDirs := Policy{Rules: rules}
	for _, c := range []struct {
		p    Policy
		line string
		want Behavior
	}{
		{withDirs, "ls > " + other + "/out.txt", Ask},
		{withDirs, "echo x >> " + other + "/app.conf", Ask},
		{withDirs, "ls > ../out.txt", Ask},
		{withDirs, "ls > link/out.txt", Ask}, // through a link out of the working directory
		{withDirs, "ls > $OUT", Ask},
		{withDirs, "ls &> " + other + "/x", Ask},
		{withDirs, "ls 2> " + other + "/x", Ask},
		{withDirs, "ls <> " + other + "/x", Ask},
		{withDirs, "bash -c 'ls > " + other + "/x'", Ask},
		{withDirs, "make 2>&1 | ls > " + other + "/x", Ask},
		{noDirs, "ls > /srv/other/x", Ask},
		{noDirs, "ls > ../x", Ask},
		{noDirs, "ls > ~/x", Ask},
		{withDirs, "ls > out.txt", Allow},
		{withDirs, "ls > " + wd + "/sub/out.txt", Allow},
		{withDirs, "ls > /dev/null 2>&1", Allow},
		{withDirs, "make 2>&1 > build.log", Allow},
		{withDirs, "bash -c 'ls > out.txt'", Allow},
		{noDirs, "ls > out.txt", Allow},
		{noDirs, "make > build/log.txt 2>&1", Allow},
	} {
		d := Decide(c.p, shell, cmd(c.line))
		if d.Behavior != c.want {
			t.Errorf("%q (dirs %q): %s (%s), want %s", c.line, c.p.WorkingDirs, d.Behavior, d.Reason, c.want)
		}
		if c.want == Ask && len(d.Suggested) > 0 {
			t.Errorf("%q: suggested %v, want none", c.line, d.Suggested)
		}
	}
	outside := "ls > " + other + "/out.txt"
	for mode, want := range map[Mode]Behavior{ModeDontAsk: Deny, ModeBypass: Allow, ModeExplore: Deny, ModeAcceptEdits: Ask} {
		p := withDirs
		p.Mode = mode
		if d := Decide(p, shell, cmd(outside)); d.Behavior != want {
			t.Errorf("%s, %q: %s (%s), want %s", mode, outside, d.Behavior, d.Reason, want)
		}
	}
	explore := withDirs
	explore.Mode = ModeExplore
	if d := Decide(explore, shell, cmd("ls > out.txt")); d.Behavior != Deny {
		t.Errorf("explore, ls > out.txt: %s (%s), want deny", d.Behavior, d.Reason)
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	if d := Decide(star, shell, cmd(outside)); d.Behavior != Allow {
		t.Errorf(`allow "*", %q: %s (%s), want allow`, outside, d.Behavior, d.Reason)
	}
}
