package permission

import "testing"

// TestBrotliWritesItsOutput: brotli writes -o's file (--output=FILE),
// and without one a copy beside each file it is given, as gzip does,
// yet "brotli:*" allowed "brotli -o /srv/other/x f", where a
// redirection there asks, as brotli was not read as a compressor. Those
// files are now files written (none with -c or -t); reading a file
// outside, or a dictionary there, stays brotli's.
func TestBrotliWritesItsOutput(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "brotli", "cd"), WorkingDirs: dirs}
		for _, line := range []string{
			"brotli -o " + other + "/x.br f",
			"brotli --output=" + other + "/x.br f",
			"brotli -d -o " + other + "/x f.br",
			"brotli -q 11 -o " + other + "/x.br f",
			"brotli " + other + "/data.db",
			"brotli -d " + other + "/x.br",
			"brotli -j " + other + "/x",
			"cd " + other + " && brotli x",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"brotli dist/app.js",
			"brotli -o dist/app.js.br " + other + "/app.js",
			"brotli -D " + other + "/dict -o x.br x",
			"brotli --dictionary=" + other + "/dict x",
			"brotli -q 11 -w 24 x",
			"brotli -c " + other + "/x > x.br",
			"brotli -dc " + other + "/x.br > x",
			"brotli -t " + other + "/x.br",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
