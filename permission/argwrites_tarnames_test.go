package permission

import "testing"

// TestTarUnderOtherNames: GNU tar installed as gtar (macOS, BSDs) and
// libarchive's bsdtar read their options as tar does, but only "tar"
// was read: "gtar -xf a.tar -C /srv" was allowed by "gtar:*" though
// "tar -xf a.tar -C /srv" asks, and "gtar --to-command=rm -xf a.tar"
// was not denied by "rm:*". They are now read as tar.
func TestTarUnderOtherNames(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "gtar", "bsdtar"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"gtar -xzf a.tgz -C " + other,
		"bsdtar -xf a.tar -C " + other,
		"gtar czf " + other + "/a.tgz .",
		"bsdtar -cf " + other + "/a.tar src",
		"/usr/bin/bsdtar xf a.tar -C " + other,
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"gtar -xzf " + other + "/a.tgz",
		"bsdtar -tf " + other + "/a.tar",
		"gtar -czf a.tgz src",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	denyRulesSee(t, []string{
		"gtar --to-command='rm -rf x' -xf a.tar",
		"gtar -I 'rm -rf x' -xf a.tar",
		"bsdtar --use-compress-program='rm -rf x' -xf a.tar",
	}, nil, []string{"gtar -xf a.tar", "bsdtar -tf a.tar"})
}
