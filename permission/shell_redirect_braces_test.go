package permission

import "testing"

// TestRedirectionBraceExpansion: the shell brace-expands a redirection's
// target and writes to it when that makes one word ("ls > {/srv/x,}"
// writes /srv/x), where the target was checked as the literal relative
// path "{/srv/x,}": an allow rule naming the command ("ls:*") covered a
// write outside the working directories, and "echo x > {/etc/passwd,}"
// was no safety ask. The target is now checked as the words it expands
// to.
func TestRedirectionBraceExpansion(t *testing.T) {
	wd := t.TempDir()
	p := Policy{WorkingDirs: []string{wd}, Rules: []Rule{
		rule(t, "execute_shell_command:ls:*", Allow), rule(t, "execute_shell_command:echo:*", Allow),
	}}
	for _, c := range []struct {
		line   string
		want   Behavior
		reason string
	}{
		{"ls > {/srv/other/x,}", Ask, "mode"},
		{"ls > {,/srv/other/x}", Ask, "mode"},
		{"echo x >> {~/.bashrc,}", Ask, "safety check"},
		{"echo x > {/etc/passwd,}", Ask, "safety check"},
		{"ls > {out,}.txt", Allow, "allow rule"},
		{"ls > '{/srv/other/x,}'", Allow, "allow rule"}, // quoted: a file of that name here
	} {
		d := Decide(p, shell, cmd(c.line))
		if d.Behavior != c.want || d.Reason != c.reason {
			t.Errorf("%q: %s (%s), want %s (%s)", c.line, d.Behavior, d.Reason, c.want, c.reason)
		}
	}
}
