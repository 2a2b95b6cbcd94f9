package permission

import "testing"

// TestSafetySeesInnerWrites: a write to a dangerous path by a command
// another runs ("bash -c 'echo x > /etc/passwd; ls'", "sh -c 'cp a
// ~/.bashrc; ls'", find -exec sh -c '… >> /etc/profile') was no safety
// ask, so an allow rule ("*", or ones covering each command) allowed it,
// where the same write on the line asks whatever the rules; a script's
// or a wrapper's command is now checked as the line's are.
func TestSafetySeesInnerWrites(t *testing.T) {
	p := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{"/srv/app"}}
	for _, c := range []string{
		"bash -c 'echo x >~/.bashrc; ls'",
		"sh -c 'cp a ~/.bashrc; ls'",
		"bash -c 'echo x > /etc/passwd; ls'",
		`find . -exec sh -c 'cat x >> /etc/profile' \;`,
		"sudo sh -c 'tee -a ~/.ssh/authorized_keys < k; true'",
		"eval 'ls; echo x > .git/hooks/pre-commit'",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"bash -c 'echo x > out.txt; ls'",
		"bash -c 'cat /etc/hosts; ls'",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}
