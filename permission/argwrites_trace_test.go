package permission

import "testing"

// TestTracersLogFiles: "strace:*", "ltrace:*", "time:*" and "script:*"
// allowed the log a tracer, GNU time or script writes outside the
// working directories ("strace -o /srv/x ls", "/usr/bin/time -o /srv/x
// make", "script -q /srv/x"), where the same write through a
// redirection asks; -o's file (a pipe to a command excepted), and
// script's typescript and logs, are now writes.
func TestTracersLogFiles(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "strace", "ltrace", "time", "/usr/bin/time", "script", "ls", "make")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"strace -o " + out + " ls",
		"strace -fo " + out + " ls",
		"strace -o" + out + " ls",
		"strace --output=" + out + " ls",
		"strace -e trace=open -o " + out + " ls",
		"ltrace -o " + out + " ls",
		"/usr/bin/time -o " + out + " make",
		"/usr/bin/time --output=" + out + " -v make",
		"time -o " + out + " make",
		"script -q " + out,
		"script -q -c make " + out,
		"script --log-out " + out + " -c make",
		"script -O " + out,
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
		"strace -o trace.txt ls",
		"strace -f ls -o " + out, // ls's -o
		"ltrace -o trace.txt ls",
		"/usr/bin/time -o time.txt make",
		"time make",
		"script -q session.log",
		"script -q -c make",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
