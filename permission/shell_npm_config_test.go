package permission

import "testing"

// TestNpmConfigFileScriptShell: npm runs a script with the script-shell
// a config file sets, and --userconfig FILE and --globalconfig FILE
// (written after the script's name too, as npm reads its options) name
// such a file, so "npm test:*" allowed "npm test --userconfig /tmp/rc"
// running any program the file names; a command npm is told to read
// its configuration from so now runs what cannot be read here, asked
// unless a rule of "*" covers it. The project's own .npmrc, a file
// writing which is a safety ask, is trusted as its package.json is.
func TestNpmConfigFileScriptShell(t *testing.T) {
	rules := shellAllowRules(t, "npm test", "npm run")
	p := Policy{Rules: rules, WorkingDirs: []string{t.TempDir()}}
	for _, line := range []string{
		"npm test --userconfig /tmp/rc",
		"npm test --userconfig=/tmp/rc",
		"npm run build --globalconfig /tmp/rc",
		"npm run build --globalconfig=/tmp/rc",
		"npm run build --userc=/tmp/rc",
		"npm test --userconfig .npmrc.ci",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"npm test",
		"npm run build",
		"npm run build -- --userconfig /tmp/rc",
		"npm test -- --watch",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: p.WorkingDirs}
	if d := Decide(star, shell, cmd("npm test --userconfig /tmp/rc")); d.Behavior != Allow {
		t.Errorf(`"*": %s (%s), want allow`, d.Behavior, d.Reason)
	}
}
