package permission

import "testing"

// TestCopiersPatchSplitWrites: "rsync:*", "scp:*", "patch:*", "split:*"
// and "csplit:*" allowed them writing outside the working directories
// ("rsync -a src/ /srv/x/", "scp host:f /srv/x", "patch -d /srv/x -p1",
// "patch -o /srv/x a.c", "split -b 1M big /srv/part-", "csplit -f
// /srv/part- big 10"), where the same write through a redirection asks,
// and after "cd /var" such a write was no safety ask; rsync's and scp's
// destination here (not another host's), where patch writes (-d DIR, or
// the current directory; -o's file) and the prefix split and csplit
// write to are now writes.
func TestCopiersPatchSplitWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "rsync", "scp", "patch", "split", "csplit", "cd", "ssh")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"rsync -a src/ " + other + "/",
		"rsync -av --delete src/ " + out,
		"rsync -a src/ " + out + " --exclude node_modules",
		"rsync -a -e ssh host:/srv/src/ " + out,
		"rsync -a --log-file=" + out + " src/ host:/srv/x/",
		"rsync -a --remove-source-files " + other + "/ host:/srv/x/",
		"rsync -a -T " + other + " src/ dst/",
		"rsync -a --backup --backup-dir=" + other + " src/ dst/",
		"scp host:f " + out,
		"scp -P 2222 -i key host:f " + out,
		"scp -r host:/srv/d " + other,
		"patch -o " + out + " a.c < fix.diff",
		"patch -d " + other + " -p1 < fix.diff",
		"patch --directory=" + other + " -p1 -i fix.diff",
		"patch -p1 " + out + " fix.diff",
		"patch -r " + out + " -p1 < fix.diff",
		"patch -b " + out + " fix.diff",
		"patch -bp1 -d " + other + " < fix.diff",
		"split -b 1M big " + other + "/part-",
		"split -l 1000 --additional-suffix=.txt big " + out,
		"csplit -f " + other + "/part- big 10",
		"csplit --prefix=" + out + " big '/^$/' '{*}'",
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
		"cd /var && split -b 1M big lib",
		"cd /etc && patch -p1 < fix.diff",
		"patch -d /var/lib/x -p1 < fix.diff",
		"rsync -a src/ ~/.ssh/",
		"scp host:key ~/.ssh/authorized_keys",
		"csplit -f ~/.ssh/x big 10",
	} {
		if d := Decide(p, shell, cmd(line)); !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"rsync -a src/ backup/",
		"rsync -a src/ host:/srv/x/",
		"rsync -avz --delete -e 'ssh -p 2222' build/ user@host:/var/www/",
		"rsync -a host::module/dir local/",
		"rsync -a rsync://host/module/ local/",
		"rsync -a " + other + "/ host:/srv/x/",
		"rsync --list-only " + other + "/",
		"scp a.txt host:" + other + "/x",
		"scp -r build user@host:/srv/www",
		"scp host:f local.txt",
		"patch -p1 < fix.diff",
		"patch -p1 -i fix.diff",
		"patch -d sub -p1 < fix.diff",
		"patch --dry-run -d " + other + " -p1 < fix.diff",
		"patch -o - a.c < fix.diff",
		"split -b 1M big part-",
		"split -l 100 big",
		"csplit big 10",
		"csplit -f part- big '/^$/' '{*}'",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
