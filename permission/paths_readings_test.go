package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFilePathReadBothWays: a file tool may take a path otherwise than
// the kernel would: the built-in ones read "~" literally (a directory
// named "~" in the workspace) and clean ".." lexically, before following
// links. A path is matched as every way it can be read, so a deny rule
// on the workspace's secrets/ sees "~/../secrets/key" and
// "link/../secrets/key", which the built-in tools open as secrets/key.
func TestFilePathReadBothWays(t *testing.T) {
	base := t.TempDir()
	wd := filepath.Join(base, "wd")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(wd, "secrets"), filepath.Join(outside, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "sub"), filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"secrets/**", wd + "/secrets/**"} {
		deny := Policy{Mode: ModeBypass, WorkingDirs: []string{wd}, Rules: []Rule{
			{Tool: ViewFileTool, Pattern: pattern, Behavior: Deny},
			{Tool: WriteFileTool, Pattern: pattern, Behavior: Deny},
		}}
		for _, f := range []string{"~/../secrets/key", "$HOME/../secrets/key", "link/../secrets/key", "secrets/key"} {
			if d := Decide(deny, viewFile, file(f)); d.Behavior != Deny {
				t.Errorf("deny %s, read %s: %s (%s), want deny", pattern, f, d.Behavior, d.Reason)
			}
			if d := Decide(deny, writeFile, file(f)); d.Behavior != Deny {
				t.Errorf("deny %s, write %s: %s (%s), want deny", pattern, f, d.Behavior, d.Reason)
			}
		}
	}
	// The kernel's reading still counts: link/../x is <outside>/x.
	deny := Policy{Mode: ModeBypass, WorkingDirs: []string{wd}, Rules: []Rule{{Tool: ViewFileTool, Pattern: outside + "/**", Behavior: Deny}}}
	if d := Decide(deny, viewFile, file("link/../x")); d.Behavior != Deny {
		t.Errorf("deny %s/**, read link/../x: %s (%s), want deny", outside, d.Behavior, d.Reason)
	}
	// An allow rule must cover every reading; one that does allows.
	allow := Policy{WorkingDirs: []string{wd}, Rules: []Rule{{Tool: WriteFileTool, Pattern: wd + "/notes/**", Behavior: Allow}}}
	if d := Decide(allow, writeFile, file("~/../notes/a.txt")); d.Behavior == Allow {
		t.Errorf("allow %s/notes/**, write ~/../notes/a.txt: allowed (%s), but it may be $HOME/../notes/a.txt", wd, d.Reason)
	}
	if d := Decide(allow, writeFile, file("notes/../notes/a.txt")); d.Behavior != Allow {
		t.Errorf("allow %s/notes/**, write notes/../notes/a.txt: %s (%s), want allow", wd, d.Behavior, d.Reason)
	}
	// accept_edits takes a write only when every reading is inside.
	acc := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	if d := Decide(acc, writeFile, file("~/x.txt")); d.Behavior == Allow && home() != "" && !inWorkingDirs(home(), []string{wd}) {
		t.Errorf("accept_edits write ~/x.txt: allowed (%s), but it may be $HOME/x.txt", d.Reason)
	}
}
