package permission

import "testing"

// TestDenyRuleSeesPastWrapperValues: wrappers' options that take the
// next word as their value (stdbuf --output L, sudo -R DIR, sudo
// --close-from 4, doas -a style, coreutils env -a NAME) were read as
// flags, so that word was taken for the command and the command that
// runs for its argument; and xargs --max-lines, whose value is optional
// (only --max-lines=N), was read as taking the command as its value.
func TestDenyRuleSeesPastWrapperValues(t *testing.T) {
	denyRulesSee(t, []string{
		"stdbuf --output L rm -rf x",
		"stdbuf --out L rm -rf x",
		"stdbuf --input 0 rm -rf x",
		"stdbuf --error L rm -rf x",
		"sudo -R /srv rm -rf x",
		"sudo --chroot /srv rm -rf x",
		"sudo -c default rm -rf x",
		"sudo --login-class default rm -rf x",
		"sudo -a pam rm -rf x",
		"sudo --auth-type pam rm -rf x",
		"sudo --close-from 4 rm -rf x",
		"doas -a style rm -rf x",
		"env -a name rm -rf x",
		"env --argv0 name rm -rf x",
		"xargs --max-lines rm -f",
		"xargs --max-l rm -f",
		"xargs --max-lines=1 rm -f",
	}, []string{
		"stdbuf --output L git push",
		"xargs --max-lines git push",
	}, []string{
		"stdbuf --output L ls",
		"xargs --max-lines echo",
	})
}
