package permission

import "testing"

// TestOutputOperandsWritten: uniq and xxd write their second operand,
// iconv its -o (--output) file and tree its -o file, but none was a file
// written, so "uniq:*" allowed "uniq in.txt /srv/other/x" (and "xxd:*",
// "iconv:*" and "tree:*" the like), a write outside the working
// directories that "uniq in.txt > /srv/other/x" asks for; they now ask
// the same, and one to a dangerous path is a safety ask.
func TestOutputOperandsWritten(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "uniq", "xxd", "iconv", "tree"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"uniq in.txt " + other + "/x",
		"uniq -c -f 1 in.txt " + other + "/x",
		"uniq --skip-fields 1 in.txt " + other + "/x",
		"uniq -- in.txt " + other + "/x",
		"xxd a.bin " + other + "/x",
		"xxd -r a.hex " + other + "/x",
		"xxd -c 8 a.bin " + other + "/x",
		"iconv -f latin1 -t utf8 -o " + other + "/x in.txt",
		"iconv --output=" + other + "/x in.txt",
		"iconv -o" + other + "/x in.txt",
		"tree -o " + other + "/x",
		"tree -L 2 -o " + other + "/x src",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"uniq in.txt ~/.bashrc",
		"xxd -r a.hex .git/hooks/pre-commit",
		"iconv -o ~/.profile in.txt",
		"tree -o .git/config",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want a safety ask", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"uniq in.txt out.txt",
		"uniq -c " + other + "/in.txt counts.txt",
		"xxd a.bin a.hex",
		"xxd -r a.hex a.bin",
		"iconv -f latin1 -t utf8 -o out.txt " + other + "/in.txt",
		"tree -o tree.txt src",
		"tree -L 2 " + other,
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
