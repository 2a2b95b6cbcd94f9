package permission

import (
	"slices"
	"testing"
)

// TestAwkProgramReadings pins what awkRuns and awkWrites read in awk
// programs where a reader of strings, regular expressions and comments
// may go wrong: "/" as a division or a regular expression, quotes
// escaped or in comments, getline < "FILE", redirections to devices.
func TestAwkProgramReadings(t *testing.T) {
	for _, c := range []struct {
		prog   string
		runs   bool
		writes []string
	}{
		{"{print a / b / c}", false, nil},
		{"{x = a / b / c; print x > \"f\"}", false, []string{"f"}},
		{"{print a / b > \"f\"}", false, []string{"f"}},
		{"/x/ {print > \"f\"}", false, []string{"f"}},
		{"{print \"a\\\"b\" > \"f\"}", false, []string{"f"}},
		{"{print \"a\\\"b > \\\"/srv/x\\\"\"}", false, nil},
		{"{print \"a\\\\\" > \"f\"}", false, []string{"f"}},
		{"# it's \"x\" | sh\n{print > \"f\"}", false, []string{"f"}},
		{"{print} # > \"/srv/x\"", false, nil},
		{"{print} # system(\"x\")", false, nil},
		{"BEGIN {while ((getline l < \"in\") > 0) n++}", false, nil},
		{"BEGIN {getline < \"f\"; print > \"g\"}", false, []string{"g"}},
		{"{printf \"%s\\n\", $0 > \"/dev/stderr\"}", false, []string{"/dev/stderr"}},
		{"{printf(\"%s\\n\", $0) > \"/dev/stderr\"}", false, []string{"/dev/stderr"}},
		{"{print $1 > /\"/; print > \"/etc/passwd\" #\"/}", false, []string{unknownFile, "/etc/passwd"}},
		{"{print $1 > /x/}", false, []string{unknownFile}},
		{"{print $1 | \"sh\"}", true, nil},
		{"{print a || b}", false, nil},
		{"{\"date\" | getline d}", true, nil},
		{"{x = /[/\"]/; print > \"f\"}", false, []string{"f"}},
		{"{n = 4 / 2 / 1; print > \"f\"}", false, []string{"f"}},
		{"{a[1] / 2 / 3}", false, nil},
		{"{print (a) / 2 / 3 > \"f\"}", false, []string{"f"}},
		{"{print x++ / 2 / 3 > \"f\"}", false, []string{"f"}},
		{"{print $1 > \"f\" \".txt\"}", false, []string{unknownFile}},
		{"{print > \"f\"} {system(\"x\")}", true, []string{"f"}},
		{"{print > \"a\" > \"b\"}", false, []string{unknownFile}},
		{"{print \"x\" >> \"f\"}", false, []string{"f"}},
		{"{print >\"f\";print>\"g\"}", false, []string{"f", "g"}},
		{"{print x,\n y > \"f\"}", false, []string{"f"}},
		{"{if (a > b) print > \"f\"}", false, []string{"f"}},
		{"{print a > b ? \"c\" : \"d\"}", false, []string{unknownFile}},
		{"{print \\\n > \"f\"}", false, []string{"f"}},
		{"@include \"x\"", true, nil},
		{"{print NR / 2 /\"> \\\"/srv/x\\\"\"/ 1}", false, nil},
		{"{print $1 > /\"/; print > \"/etc/passwd\"; s = \"\\\"\"}", false, []string{unknownFile, "/etc/passwd"}},
		{"{print $1 > /\"/; print | \"sh\"; s = \"\\\"\"}", true, []string{unknownFile}},
		{"BEGIN {printf \"x\" > \"/dev/stderr\"; exit}", false, []string{"/dev/stderr"}},
		{"{print \"#\" > \"f\"}", false, []string{"f"}},
		{"{print \"a\" # \"b\" > \"f\"\n}", false, nil},
		{"{print 1/2/3 | \"sh\"}", true, nil},
		{"{a = b /2/ c; print > \"f\"}", false, []string{"f"}},
		{"{print \"\\\\\\\"\" > \"f\"}", false, []string{"f"}},
		{"{print \"x\"} END {close(\"f\"); getline x < \"f\"}", false, nil},
	} {
		if got := awkRuns(c.prog); got != c.runs {
			t.Errorf("awkRuns(%q) = %v, want %v", c.prog, got, c.runs)
		}
		if got := awkWrites(c.prog); !slices.Equal(got, c.writes) {
			t.Errorf("awkWrites(%q) = %q, want %q", c.prog, got, c.writes)
		}
	}
}

// TestSedScriptReadings pins what sedRead (runs and files written) and
// plainSedScript read in sed scripts: s///w and s///gw, flags after a
// blank, y///, blocks, ";" and newlines, addresses, comments, text.
func TestSedScriptReadings(t *testing.T) {
	for _, c := range []struct {
		script string
		runs   bool
		files  []string
		plain  bool
	}{
		{"s/x/y/w f", false, []string{"f"}, false},
		{"s/x/y/gw f", false, []string{"f"}, false},
		{"s/x/y/g w f", true, nil, false},
		{"s/x/y/ w f", true, nil, false},
		{"s/x/y/e", true, nil, false},
		{"s/x/y/ge", true, nil, false},
		{"y/abc/xyz/", false, nil, true},
		{"y/a/b/w f", true, nil, false},
		{"y/a/b/;w f", false, []string{"f"}, false},
		{"{s/a/b/}", false, nil, false},
		{"/x/{s/a/b/;p}", false, nil, false},
		{"/x/{w f\n}", false, []string{"f"}, false},
		{"s/a/b/;p", false, nil, true},
		{"s/a/b/\np", false, nil, true},
		{"p d", true, nil, false},
		{"p;d", false, nil, true},
		{"1d;$d", false, nil, true},
		{"/a/,/b/d", false, nil, true},
		{"1,+2d", false, nil, true},
		{"0~2d", false, nil, true},
		{"\\%x%d", false, nil, true},
		{"/x/Id", false, nil, true},
		{"1!d", false, nil, true},
		{"1 !d", false, nil, true},
		{"# c\ns/a/b/", false, nil, false},
		{"s/a/b/ # c", false, nil, false},
		{"a foo", false, nil, true},
		{"a foo; w f", false, nil, true},
		{"a\\\nw f", false, nil, true},
		{"i\\", false, nil, true},
		{"c x", false, nil, true},
		{"s/a\\/b/c/", false, nil, true},
		{"s|a|b|w f", false, []string{"f"}, false},
		{"s;a;b;w f", false, []string{"f"}, false},
		{"s/[/]/x/", false, nil, true},
		{"s/a/b/w", false, nil, false},
		{"w", false, nil, false},
		{"r f", false, nil, false},
		{"R f", false, nil, false},
		{"W f", false, []string{"f"}, false},
		{"e ls", true, nil, false},
		{"F", false, nil, false},
		{"=", false, nil, true},
		{"l", false, nil, false},
		{"q", false, nil, false},
		{"q 5", false, nil, false},
		{"Q", false, nil, false},
		{"b end", false, nil, false},
		{":a", false, nil, false},
		{"z", false, nil, true},
		{"s/a/b/3", false, nil, true},
		{"s/a/b/Ig", false, nil, true},
		{"s/a/b/m", false, nil, true},
		{"s/a/b/M", false, nil, true},
		{"v", false, nil, false},
		{"T", false, nil, false},
		{"t x", false, nil, false},
		{"n;N", false, nil, true},
		{"x", false, nil, true},
		{"G;H", false, nil, true},
		{"h;g", false, nil, true},
		{"1~3p", false, nil, true},
		{"$!N", false, nil, true},
		{"s/x/y/;}", false, nil, false},
		{"}", false, nil, false},
		{"{", false, nil, false},
		{"s/a/b", true, nil, false},
		{"/x/ s/a/b/", false, nil, true},
		{"/x/,/y/ !d", false, nil, true},
		{"1,3\td", false, nil, true},
		{"s\na\nb\n", true, nil, false},
		{"s/a/b/p;w f", false, []string{"f"}, false},
		{"s/[/]/x/w f", false, []string{"f"}, false},
		{"s/[/]/;a/w f", false, []string{"f"}, false},
		{"/[/]/w f", false, []string{"f"}, false},
		{"/[/!a]/w f", false, []string{"f"}, false},
		{"s/[]/]/x/", false, nil, true},
		{"s/x/[/]/", true, nil, false},
		{"y/[/]/x/", true, nil, false},
		{"s/a/b/g\nw f", false, []string{"f"}, false},
		{"1{p;w f\n}", false, []string{"f"}, false},
		{"/x/ { s/a/b/ ; }", false, nil, false},
	} {
		runs, files := sedRead(c.script)
		if runs != c.runs || !slices.Equal(files, c.files) {
			t.Errorf("sedRead(%q) = %v, %q, want %v, %q", c.script, runs, files, c.runs, c.files)
		}
		if got := plainSedScript(c.script); got != c.plain {
			t.Errorf("plainSedScript(%q) = %v, want %v", c.script, got, c.plain)
		}
	}
}

// TestSedAwkLineReadings pins the decisions on sed and awk lines whose
// scripts come from -e, several of them, or -f, with "sed:*", "awk:*"
// and "gawk:*" allowed, and on sed -i lines in ACCEPT_EDITS.
func TestSedAwkLineReadings(t *testing.T) {
	wd := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "sed", "awk", "gawk"), WorkingDirs: []string{wd}}
	edits := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{wd}}
	for _, c := range []struct {
		p    Policy
		line string
		want Behavior
	}{
		{p, "sed -f s.sed a.txt", Ask},
		{p, "sed -n -f s.sed -e p a.txt", Ask},
		{p, "sed --file=s.sed a.txt", Ask},
		{p, "sed -e 's/a/b/' -e 'w out.txt' a.txt", Allow},
		{p, "sed -e 's/a/b/' -e 'w /srv/out' a.txt", Ask},
		{p, "sed -e 'a\\' -e 'w /srv/out' a.txt", Allow},
		{p, "sed -e '/x/{' -e 's/a/b/' -e '}' a.txt", Allow},
		{p, "sed -e '/x/{' -e 'w /srv/out' -e '}' a.txt", Ask},
		{p, "sed 's/x/y/;s/a/b/e' a.txt", Ask},
		{p, "sed -n '/a/,/b/{/c/!p;}' a.txt", Allow},
		{p, "awk -f p.awk a.txt", Ask},
		{p, "gawk -f p.awk -e '{print}' a.txt", Ask},
		{p, "gawk -e '{print > \"out.txt\"}' -e '{print}' a.txt", Allow},
		{p, "gawk -e 'BEGIN {x = 1}' -e '{print | \"sh\"}' a.txt", Ask},
		{p, "awk '{print a / b / c}' a.txt", Allow},
		{p, "awk '{getline < \"in.txt\"; print > \"out.txt\"}' a.txt", Allow},
		{p, "awk '{printf \"x\" > \"/dev/stderr\"}' a.txt", Allow},
		{p, "awk '{print \"a\\\"b > /srv/out\"}' a.txt", Allow},
		{p, "awk '# it'\"'\"'s \"x\" | sh\n{print}' a.txt", Allow},
		{edits, "sed -i -f s.sed a.txt", Ask},
		{edits, "sed -i -e 's/a/b/' -e 'y/abc/xyz/' a.txt", Allow},
		{edits, "sed -i -e '/x/{' -e 's/a/b/' -e '}' a.txt", Ask},
		{edits, "sed -i 's/x/y/;s/a/b/gw out.txt' a.txt", Ask},
		{edits, "sed -i 's/a/b/;# c' a.txt", Ask},
		{edits, "sed -i 's|[|]|_|g' a.txt", Allow},
	} {
		if d := Decide(c.p, shell, cmd(c.line)); d.Behavior != c.want || d.Safety {
			t.Errorf("mode %q, %q: %s (%s, safety %v), want %s", c.p.Mode, c.line, d.Behavior, d.Reason, d.Safety, c.want)
		}
	}
}
