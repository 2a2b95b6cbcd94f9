package permission

import "testing"

// TestBuildToolSideFiles: tsc's --generateTrace directory and
// --generateCpuProfile file, javac's -Xstdout file and pip's --log
// (--log-file, --local-log) and --report files are written wherever
// they are named, but were not read as written, so "tsc:*" allowed
// "tsc --noEmit --generateTrace /srv/other", "javac:*" "javac -d out
// -Xstdout /srv/other/log Main.java" and "pip:*" "pip install --log
// /srv/other/pip.log x", where a redirection there asks. They now ask
// the same; inside, they stay the rules'.
func TestBuildToolSideFiles(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "tsc", "javac", "pip"), WorkingDirs: dirs}
		for _, line := range []string{
			"tsc --noEmit --generateTrace " + other,
			"tsc --outDir dist --generateTrace=" + other + "/trace",
			"tsc --outDir dist --generateCpuProfile " + other + "/p.cpuprofile",
			"tsc -p . --generatecpuprofile " + other + "/p.cpuprofile",
			"javac -d out -Xstdout " + other + "/log Main.java",
			"pip install --log " + other + "/pip.log requests",
			"pip install --log-file=" + other + "/pip.log requests",
			"pip --local-log " + other + "/pip.log install requests",
			"pip install --report " + other + "/r.json requests",
			"pip install --dry-run --report=" + other + "/r.json requests",
		} {
			d := Decide(p, shell, cmd(line))
			if d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"tsc --noEmit --generateTrace trace",
			"tsc --outDir dist --generateCpuProfile p.cpuprofile",
			"javac -d out -Xstdout build/javac.log Main.java",
			"pip install --log pip.log requests",
			"pip install --dry-run --report - requests",
			"pip install --report report.json -r requirements.txt",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
