package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWritesAfterCdDotNameCDPATH: the shell looks a cd's directory up
// in CDPATH unless it is absolute or starts with "./" or "../" (or is
// "." or ".."), so "cd .x" with CDPATH set may go to $CDPATH/.x; it
// was taken as ./.x, and "export CDPATH=/srv; cd .x && rm -rf
// ../projects" removed /srv/projects unasked. Such a name is one not
// known here, as any other.
func TestWritesAfterCdDotNameCDPATH(t *testing.T) {
	wd := t.TempDir()
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, ".x"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "cd", "ls", "rm", "export"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"export CDPATH=" + out + "; cd .x && rm -rf ../projects",
		"export CDPATH=" + out + "; cd ..x && ls > ../f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"export CDPATH=" + out + "; cd ./sub && ls > ../f",
		"export CDPATH=" + out + "; cd . && ls > f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}

// TestWritesAfterCdCDPATHBraced: "export CDPAT{H,}=/srv" sets CDPATH
// (bash brace-expands the word, which names no variable as written), so
// "cd sub" may go to /srv/sub; the line was taken as setting none, and
// "export CDPAT{H,}=/srv; cd sub && ls > ../f" wrote /srv/f unasked. A
// command that sets variables (export, declare, read, …) with a word the
// shell expands may set CDPATH, as with a $-expansion.
func TestWritesAfterCdCDPATHBraced(t *testing.T) {
	wd := t.TempDir()
	out, err := os.MkdirTemp("", "srv") // not t.TempDir(): its name has "CDPATH"
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	for _, d := range []string{filepath.Join(wd, "sub"), filepath.Join(out, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{Rules: shellAllowRules(t, "cd", "ls", "export"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"export CDPAT{H,}=" + out + "; cd sub && ls > ../f",
		"export CDPAT{H,}=" + out + "; cd sub; ls > f",
		"export CDPAT?=" + out + "; cd sub && ls > ../f",
		"export X=CDP; export ${X}ATH=..; cd sub && ls > f", // ../sub/f
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	if line := "export X=1; cd sub && ls > ../f"; Decide(p, shell, cmd(line)).Behavior != Allow {
		t.Errorf("%q: %+v want allow", line, Decide(p, shell, cmd(line)))
	}
}
