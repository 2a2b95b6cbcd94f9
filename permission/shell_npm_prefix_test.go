package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNpmPrefixOtherProject: npm's --prefix DIR (-C DIR, --prefi=DIR as
// npm expands it), pnpm's --dir DIR (-C DIR) and yarn's --cwd DIR run
// the scripts of DIR's package.json, so "npm test:*", which trusts the
// workspace's scripts, allowed "npm test --prefix /srv/other" running
// another project's; a project directory outside the working
// directories is now asked unless a rule of "*" covers it, as a config
// file npm is told to read is, with no rule suggested. One inside stays
// allowed, the shell's cd taken.
func TestNpmPrefixOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The rules of a script's name, and of the tool's name, which
	// allows the options before the script's name too.
	scripts := shellAllowRules(t, "npm test", "npm run", "pnpm test", "pnpm build", "yarn test", "yarn run", "cd", "sh", "sudo npm test")
	tools := shellAllowRules(t, "npm", "pnpm", "yarn", "cd", "sh", "sudo npm")
	for _, c := range []struct {
		rules []Rule
		dirs  []string
	}{{scripts, []string{wd}}, {scripts, nil}, {tools, []string{wd}}, {tools, nil}} {
		p := Policy{Rules: c.rules, WorkingDirs: c.dirs}
		dirs := c.dirs
		for _, line := range []string{
			"npm test --prefix /srv/other",
			"npm test --prefix=/srv/other",
			"npm test -C /srv/other",
			"npm --prefix=/srv/other run build",
			"npm --prefix /srv/other run build",
			"npm test --prefi=/srv/other",
			"npm test --prefi /srv/other",
			"npm test --prefix ../other",
			"npm test --prefix ~/other",
			"npm test --prefix $OTHER",
			"npm test --prefix sub/../../other",
			"cd sub && npm test --prefix ../../other",
			"sudo npm test --prefix /srv/other",
			"sh -c 'npm test --prefix /srv/other'",
			"sh <<EOF\nnpm test --prefix /srv/other\nEOF",
			"pnpm --dir /srv/other test",
			"pnpm --dir=/srv/other test",
			"pnpm -C /srv/other build",
			"pnpm test -C /srv/other",
			"yarn --cwd /srv/other test",
			"yarn --cwd=/srv/other run build",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
				t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
			}
			// No rule but "*" allows it: only a one-shot approval fits.
			if d := Decide(Policy{WorkingDirs: dirs}, shell, cmd(line)); len(d.Suggested) > 0 {
				t.Errorf("%v %q: suggests %v, want none", dirs, line, d.Suggested)
			}
		}
		allowed := []string{
			"npm test",
			"npm run build -- --watch",
			"npm test -C sub/deep",
			"npm test --prefix .",
			"npm test -- --prefix /srv/other",
			"npm run build --dir /srv/other",
			"pnpm test -C sub",
		}
		if &c.rules[0] == &tools[0] {
			allowed = append(allowed,
				"npm --prefix ./sub test",
				"npm --prefix sub run build",
				"pnpm --dir sub test",
				"pnpm -C ./sub build",
				"yarn --cwd sub test")
		}
		for _, line := range allowed {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
		if dirs != nil {
			// With no working directories a ".." may lead anywhere (sub
			// may be a link).
			for _, line := range []string{"cd sub && npm test --prefix ..", "npm test --prefix " + filepath.Join(wd, "sub"), "pnpm test --dir " + wd} {
				if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
					t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
				}
			}
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	if d := Decide(star, shell, cmd("npm test --prefix /srv/other")); d.Behavior != Allow {
		t.Errorf(`"*": %s (%s), want allow`, d.Behavior, d.Reason)
	}
}
