package permission

import "testing"

// TestNpmScriptShellSpellings: npm keeps an option it does not know
// (--script_shell=PROG, --SCRIPT-SHELL=PROG) and passes it to the
// scripts it runs as npm_config_script_shell, which an npm a script
// runs ("test": "npm run build") takes as its script-shell (npm reads
// such a variable's key with "_" as "-" and whatever its case), so
// "npm test:*" allowed "npm test --script_shell=/tmp/evil" running that
// program; every spelling now counts as --script-shell does, and so
// does pnpm's --config.script-shell=PROG.
func TestNpmScriptShellSpellings(t *testing.T) {
	p := Policy{Rules: shellAllowRules(t, "npm test", "npm run", "pnpm test", "npm", "pnpm"), WorkingDirs: []string{t.TempDir()}}
	for _, line := range []string{
		"npm test --script_shell=/tmp/evil",
		"npm test --SCRIPT_SHELL=/tmp/evil",
		"npm test --Script-Shell=/tmp/evil",
		"npm --script_shell=/tmp/evil run build",
		"npm test --script-shell /tmp/evil",
		"npm test --script-sh=/tmp/evil",
		"npm_config_script_shell=/tmp/evil npm test",
		"NPM_CONFIG_SCRIPT_SHELL=/tmp/evil npm test",
		"pnpm test --config.script-shell=/tmp/evil",
		"pnpm --config.script_shell=/tmp/evil test",
		"pnpm test --script-shell=/tmp/evil",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"npm test",
		"npm run build -- --watch",
		"npm test -- --script_shell=/tmp/evil",
		"npm test --script_shelly=/tmp/evil",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	denyRulesSee(t, []string{
		"npm test --script_shell=rm",
		"npm test --SCRIPT-SHELL=rm",
		"pnpm test --config.script-shell=rm",
	}, nil, nil)
}
