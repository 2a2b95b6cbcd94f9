package permission

import "testing"

// TestLz4WritesItsOutput: lz4 takes its second operand as the file it
// writes ("lz4 in /srv/other/x" compresses in into /srv/other/x), and
// with one operand writes in.lz4 beside it (with -m, beside each), yet
// "lz4:*" allowed those writes, where a redirection there asks, as lz4
// was not read as a compressor. Its output is now a file written (none
// with -c, -t or --list); reading a file outside stays lz4's.
func TestLz4WritesItsOutput(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "lz4", "unlz4", "lz4cat", "cd"), WorkingDirs: dirs}
		for _, line := range []string{
			"lz4 in " + other + "/x",
			"lz4 -9 in " + other + "/x.lz4",
			"lz4 -d x.lz4 " + other + "/x",
			"lz4 -D dict in " + other + "/x",
			"lz4 " + other + "/data.db",
			"lz4 -d " + other + "/x.lz4",
			"lz4 -m a " + other + "/b",
			"lz4 --multiple --rm a " + other + "/b",
			"unlz4 " + other + "/x.lz4",
			"cd " + other + " && lz4 x",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"lz4 build.log",
			"lz4 -d vendor.tar.lz4",
			"lz4 " + other + "/in out.lz4",
			"lz4 -D " + other + "/dict in out.lz4",
			"lz4 -dc " + other + "/x.lz4 > x",
			"lz4 -c " + other + "/x " + other + "/y > x.lz4",
			"lz4 -t " + other + "/x.lz4",
			"lz4 --list " + other + "/x.lz4",
			"lz4cat " + other + "/x.lz4",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
