package permission

import "testing"

// TestFormatterAndOpensslWrites: gofmt -w (and goimports -w) rewrites
// the files and directories it is given, and openssl writes -out's and
// -keyout's files, but none was a file written, so "gofmt:*" allowed
// "gofmt -w /srv/other/x.go" and "openssl:*" "openssl genrsa -out
// /srv/other/key.pem", writes outside the working directories that a
// redirection there asks for; they now ask the same.
func TestFormatterAndOpensslWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "gofmt", "goimports", "openssl"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"gofmt -w " + other + "/x.go",
		"gofmt -s -w " + other,
		"gofmt -l -w . " + other,
		"gofmt -w=true " + other + "/x.go",
		"goimports -w " + other + "/x.go",
		"openssl genrsa -out " + other + "/key.pem 2048",
		"openssl req -new -x509 -keyout " + other + "/k.pem -out c.pem",
		"openssl enc -aes-256-cbc -in a -out " + other + "/a.enc",
		"openssl rand -out " + other + "/r 16",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"gofmt -l .",
		"gofmt -w main.go",
		"gofmt -d " + other + "/x.go",
		"gofmt -l " + other,
		"goimports -w .",
		"openssl rand -hex 16 > secret.key",
		"openssl genrsa -out key.pem 2048",
		"openssl x509 -in " + other + "/c.pem -noout -text",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}

// TestOpensslWritesAnySpelling: openssl's option parser takes -out as
// --out too, and its value glued as -out=FILE, but only "-out FILE" and
// "-keyout FILE" were read as files written, so "openssl:*" allowed
// "openssl genrsa -out=/srv/other/key.pem"; nor were the other files its
// options name written (-writerand, s_client's -sess_out and
// -keylogfile, ocsp's -reqout and -respout, ca's -outdir, x509's
// -CAserial). Each spelling of each is now read as openssl does.
func TestOpensslWritesAnySpelling(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "openssl"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"openssl genrsa -out=" + other + "/key.pem 2048",
		"openssl genrsa --out " + other + "/key.pem 2048",
		"openssl genrsa --out=" + other + "/key.pem 2048",
		"openssl req -new -x509 --keyout=" + other + "/k.pem -out c.pem",
		"openssl rand -writerand " + other + "/seed 16",
		"openssl s_client -connect h:443 -sess_out " + other + "/s",
		"openssl s_client -connect h:443 -keylogfile=" + other + "/k",
		"openssl ocsp -issuer ca.pem -cert c.pem -reqout " + other + "/r",
		"openssl ocsp -respin r -respout " + other + "/r",
		"openssl ca -in r.csr -outdir " + other,
		"openssl x509 -req -in r.csr -CA ca.pem -CAkey k.pem -CAserial " + other + "/ca.srl -out c.pem",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"openssl genrsa -out=key.pem 2048",
		"openssl genrsa --out key.pem 2048",
		"openssl req -new -x509 -keyout k.pem --out=c.pem -days 1 -nodes -subj /CN=x",
		"openssl x509 --in=" + other + "/c.pem -noout -text",
		"openssl s_client -connect h:443 -sess_out s.pem",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
