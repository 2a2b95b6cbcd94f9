package permission

import "testing"

// TestDenyRuleSeesBracedWrappers: a brace expansion that makes a path
// or a wrapper the command ({/bin/rm,x}, {sudo,rm,x}, {sh,-c,'rm x'})
// was read as the expanded words alone, never as the command they run.
func TestDenyRuleSeesBracedWrappers(t *testing.T) {
	denyRulesSee(t, []string{
		"{/bin/rm,-rf,x}",
		"{sudo,rm,-rf,x}",
		"{command,rm,-rf,x}",
		`{sh,-c,rm\ -rf\ x}`,
		"{/bin/r[m],x}",
	}, []string{
		"{env,git,push}",
	}, []string{
		"{echo,rm}",
	})
}
