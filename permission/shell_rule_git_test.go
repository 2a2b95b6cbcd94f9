package permission

import "testing"

// TestDenyRuleSeesGitSubcommands: git's own options before its
// subcommand (git -C dir push, git --no-pager push, git -c k=v push,
// git --git-dir=.git push) and git's dashed programs (git-push,
// /usr/lib/git-core/git-push) run the subcommand as "git push" does,
// but a deny or ask rule on "git push" matched only the words as
// written, so bypass mode pushed.
func TestDenyRuleSeesGitSubcommands(t *testing.T) {
	denyRulesSee(t, nil, []string{
		"git -C . push",
		"git -C /srv/app push origin main",
		"git --no-pager push",
		"git -P push",
		"git -c user.name=x push",
		"git --git-dir=.git push",
		"git --git-dir .git --work-tree . push",
		"git --bare push",
		"git-push origin",
		"/usr/lib/git-core/git-push origin",
		"sudo git -C . push",
	}, []string{
		"git -C . status",
		"git --no-pager log -1",
		"git -C . pull",
	})
}
