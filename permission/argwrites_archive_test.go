package permission

import "testing"

// TestArchiveExtractsAndCreates: "tar:*" and "unzip:*" allowed them
// writing outside the working directories ("tar -xzf a.tgz -C /srv",
// "tar czf /srv/a.tgz .", "unzip a.zip -d /srv"), and "tar xf a.tar -C
// /var lib" extracting into a dangerous place after a cd was no safety
// ask. Where tar extracts (-C DIR, or the current directory), the
// archive it creates or changes (-f), and unzip's -d directory (or the
// current directory) are now writes, tar's options read as tar reads
// them (the first word's letters without a dash, whose values follow in
// order).
func TestArchiveExtractsAndCreates(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "tar", "unzip", "cd")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"tar -xzf a.tgz -C " + other,
		"tar xzf a.tgz -C " + other,
		"tar -C " + other + " -xf a.tar",
		"tar -xf a.tar -C" + other,
		"tar --extract --file=a.tar --directory=" + other,
		"tar --extract --file a.tar --directory " + other,
		"tar -x -f a.tar --dir=" + other,
		"tar xfC a.tar " + other,
		"tar czf " + other + "/a.tgz .",
		"tar -czf " + other + "/a.tgz src",
		"tar -cf" + other + "/a.tar src",
		"tar --create --file=" + other + "/a.tar src",
		"tar rf " + other + "/a.tar x",
		"cd " + other + " && tar xf " + wd + "/a.tar",
		"unzip a.zip -d " + other,
		"unzip -o a.zip -d" + other,
		"unzip -q -d " + other + " a.zip",
		"cd " + other + " && unzip " + wd + "/a.zip",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
		if len(d.Suggested) > 0 {
			t.Errorf("%q: suggested %v, want none", line, d.Suggested)
		}
	}
	for _, line := range []string{
		"tar -xzf " + other + "/a.tgz",
		"tar xzf " + other + "/a.tgz -C vendor",
		"tar czf a.tgz " + other + "/src",
		"tar -tzf " + other + "/a.tgz",
		"tar tf " + other + "/a.tar",
		"tar -czf - src",
		"unzip " + other + "/a.zip -d vendor",
		"unzip -l " + other + "/a.zip",
		"unzip " + other + "/a.zip",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd /var && tar xf " + wd + "/a.tar -C lib",
		"cd /var && unzip " + wd + "/a.zip -d lib",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
