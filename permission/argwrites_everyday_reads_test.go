package permission

import "testing"

// TestEverydayReadsIntoWorkspace: a read-only command whose output goes
// to a file inside reads the paths it names, whatever they are, so a
// system file or a device it reads is no dangerous write
// ("head -c 100 /dev/urandom > rand.bin"), while one it writes still is.
func TestEverydayReadsIntoWorkspace(t *testing.T) {
	wd := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "head", "grep", "cat", "wc", "sort", "tee", "cp"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"head -c 100 /dev/urandom > rand.bin",
		"grep -n printf /usr/include/stdio.h > printf.txt",
		"cat /etc/os-release > os.txt",
		"wc -l /etc/hosts >> counts.txt",
		"sort /usr/share/dict/words > words.txt 2>&1",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"cat x > /etc/os-release",
		"cat /etc/hosts > .git/hooks/pre-commit",
		"grep x /etc/hosts > ~/.bashrc",
		"sort -o /etc/hosts /etc/hosts",
		"head /etc/hosts | tee /etc/motd",
		"cp /etc/hosts /usr/local/hosts",
		"cat /etc/hosts > out.txt; cp out.txt /etc/hosts",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior == Allow || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
