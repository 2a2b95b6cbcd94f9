package permission

import "testing"

// TestDenyRuleSeesModulesAndPackageRunners: "python -m pip install x"
// runs pip, "npx eslint ." runs eslint's command, "pnpm dlx", "yarn dlx",
// "npm exec", "uvx", "uv tool run", "uv run" and "pipx run" run the
// command or package named after their options, "uv pip" is pip, and
// npx -c and npm exec --call run a script; a deny or ask rule on pip
// install, eslint or rm did not see any of them. They are now read as
// the command they run, its version (eslint@8) aside.
func TestDenyRuleSeesModulesAndPackageRunners(t *testing.T) {
	p := Policy{Mode: ModeBypass, Rules: []Rule{
		rule(t, "execute_shell_command:pip install:*", Deny),
		rule(t, "execute_shell_command:eslint:*", Deny),
		rule(t, "execute_shell_command:rm:*", Deny),
	}}
	for _, c := range []string{
		"python -m pip install requests",
		"python3 -m pip install requests",
		"python3.12 -m pip install requests",
		"python3 -Im pip install requests",
		"python3 -mpip install requests",
		"python3 -X dev -m pip install requests",
		"python3 -m pip --proxy p install requests",
		"uv pip install requests",
		"npx eslint .",
		"npx --yes eslint@8 .",
		"npx -p eslint eslint .",
		"npx -- eslint .",
		"npx -c 'rm -rf x'",
		"npm exec eslint .",
		"npm exec --call='rm -rf x'",
		"npm x -- eslint .",
		"npm --prefix web exec eslint .",
		"pnpm dlx eslint .",
		"pnpm exec rm -rf x",
		"pnpm dlx -c 'rm -rf x'",
		"pnpm --filter web exec eslint .",
		"yarn dlx eslint .",
		"yarn exec rm -rf x",
		"bunx eslint .",
		"uvx --from eslint eslint .",
		"uv tool run --python 3.12 rm -rf x",
		"uv run rm -rf x",
		"uv run -- rm -rf x",
		"pipx run --spec x rm -rf x",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("%q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"python -m pytest -x",
		"python3 -c 'import pip'",
		"python3 script.py -m pip install x",
		"python3 -m pip list",
		"npx prettier --write .",
		"pnpm dlx create-vite app",
		"uvx ruff check .",
		"uv run pytest",
		"pipx run black .",
	} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
	// An allow rule naming the package covers what it runs; one on the
	// runner alone does not (as "sudo:*" does not allow "sudo rm x").
	allow := func(pats ...string) Policy {
		var q Policy
		for _, pat := range pats {
			q.Rules = append(q.Rules, rule(t, "execute_shell_command:"+pat, Allow))
		}
		return q
	}
	for _, c := range []struct {
		rule, line string
		want       Behavior
	}{
		{"npx eslint:*", "npx eslint .", Allow},
		{"python -m pytest:*", "python -m pytest -x", Allow},
		{"uv run pytest:*", "uv run pytest", Allow},
		{"npx:*", "npx rimraf x", Ask},
		{"uv run:*", "uv run rm -rf x", Ask},
		{"pnpm exec:*", "pnpm exec rm -rf x", Ask},
	} {
		if d := Decide(allow(c.rule), shell, cmd(c.line)); d.Behavior != c.want {
			t.Errorf("allow %q, %q: %s (%s), want %s", c.rule, c.line, d.Behavior, d.Reason, c.want)
		}
	}
}
