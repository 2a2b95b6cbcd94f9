package permission

import "testing"

// TestRelativePatternUnderGlobDir: a relative path pattern ("secrets/**")
// names a path under the first working directory, whatever glob
// characters that directory's name holds: with bracket sets read, a
// working directory /srv/app[1] made a deny rule "secrets/**" match
// /srv/app1/secrets and no longer its own secrets.
func TestRelativePatternUnderGlobDir(t *testing.T) {
	for _, wd := range []string{"/srv/app[1]", "/srv/[!a]", "/srv/a*b", "/srv/a?b"} {
		p := Policy{Mode: ModeBypass, WorkingDirs: []string{wd}, Rules: []Rule{{Tool: ViewFileTool, Pattern: "secrets/**", Behavior: Deny}}}
		for _, f := range []string{"secrets/key", wd + "/secrets/key"} {
			if d := Decide(p, viewFile, file(f)); d.Behavior != Deny {
				t.Errorf("working directory %s, deny secrets/**, read %s: %s (%s)", wd, f, d.Behavior, d.Reason)
			}
		}
		for _, f := range []string{"/srv/app1/secrets/key", "/srv/b/secrets/key", "/srv/aXb/secrets/key"} {
			if d := Decide(p, viewFile, file(f)); d.Behavior == Deny {
				t.Errorf("working directory %s, deny secrets/**, read %s: denied", wd, f)
			}
		}
		allow := Policy{WorkingDirs: []string{wd}, Rules: []Rule{{Tool: WriteFileTool, Pattern: "src/**", Behavior: Allow}}}
		if d := Decide(allow, writeFile, file("src/main.go")); d.Behavior != Allow {
			t.Errorf("working directory %s, allow src/**, write src/main.go: %s (%s)", wd, d.Behavior, d.Reason)
		}
		if d := Decide(allow, writeFile, file("/srv/app1/src/main.go")); d.Behavior == Allow {
			t.Errorf("working directory %s, allow src/**, write /srv/app1/src/main.go: allowed", wd)
		}
	}
}
