package permission

import "testing"

// TestDownloadersOtherWrites: "wget:*" and "curl:*" allowed the other
// files wget and curl write that their arguments name outside the
// working directories ("wget --save-cookies /srv/x URL", the wgetrc
// command "wget -e output_document=/srv/x URL", curl's write-out
// "%output{/srv/x}"), and such a file on a dangerous path was no safety
// ask; they are writes now, as -O and -o are.
func TestDownloadersOtherWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: argWriteRules(t), WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"wget --save-cookies " + out + " https://example.com/x",
		"wget --save-cookies=" + out + " https://example.com/x",
		"wget --save-c " + out + " https://example.com/x",
		"wget --rejected-log=" + out + " https://example.com/x",
		"wget --hsts-file " + out + " https://example.com/x",
		"wget --warc-file=" + out + " https://example.com/x",
		"wget -e output_document=" + out + " https://example.com/x",
		"wget -e 'output_document = " + out + "' https://example.com/x",
		"wget -qe logfile=" + out + " https://example.com/x",
		"wget --execute=dir_prefix=" + other + " https://example.com/x",
		"wget -e outputDocument=" + out + " https://example.com/x",
		"wget -e save-cookies=" + out + " https://example.com/x",
		"curl -w '%output{" + out + "}%{http_code}' https://example.com/x",
		"curl -sw '%output{>>" + out + "}%{url}' https://example.com/x",
		"curl --write-out='%output{" + out + "}x' https://example.com/x",
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
		"wget --save-cookies cookies.txt https://example.com/x",
		"wget -e robots=off -r https://example.com/x",
		"wget -e output_document=x.html https://example.com/x",
		"curl -w '%{http_code}' -o /dev/null https://example.com/x",
		"curl -w '%output{timings.txt}%{time_total}' https://example.com/x",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"wget --save-cookies ~/.netrc https://example.com/x",
		"wget -e output_document=~/.bashrc https://example.com/x",
		"cd ~ && wget -e output_document=.bashrc https://example.com/x",
		"curl -w '%output{~/.bashrc}echo x' https://example.com/x",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}

// TestDownloadersConfigFiles: "curl:*" and "wget:*" allowed curl -K
// FILE (--config) and wget --config=FILE, whose file can name any
// output ("output = /srv/x", "output_document = ~/.bashrc"), so a rule
// naming the command covered writes it cannot see; such a command's
// writes are now in a place not known here, outside the working
// directories, as a file the shell names is.
func TestDownloadersConfigFiles(t *testing.T) {
	wd := t.TempDir()
	p := Policy{Rules: argWriteRules(t), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"curl -K curl.cfg https://example.com/x",
		"curl -sK curl.cfg",
		"curl --config curl.cfg",
		"curl --config=curl.cfg",
		"curl -K - https://example.com/x",
		"wget --config=wget.rc https://example.com/x",
		"wget --config wget.rc https://example.com/x",
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
		"curl -fsSL https://example.com/x",
		"curl -fsSL -o x.tgz https://example.com/x",
		"curl -c cookies.txt -b cookies.txt https://example.com/x",
		"curl --output-dir dl -O https://example.com/x",
		"wget -q https://example.com/x",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
