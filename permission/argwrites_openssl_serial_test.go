package permission

import "testing"

// TestOpensslCreateSerialWritesBesideCA: openssl x509 -CAcreateserial
// writes the CA's serial file, named as -CA's file with its extension
// made .srl, beside it, yet "openssl:*" allowed "openssl x509 -req -in
// r.csr -CA /srv/other/ca.pem -CAkey k.pem -CAcreateserial -out c.pem",
// which writes /srv/other/ca.srl, where -CAserial /srv/other/ca.srl
// asks. That file is now a file written; a CA inside, or one read
// without -CAcreateserial, stays openssl's.
func TestOpensslCreateSerialWritesBesideCA(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "openssl"), WorkingDirs: dirs}
		for _, line := range []string{
			"openssl x509 -req -in r.csr -CA " + other + "/ca.pem -CAkey k.pem -CAcreateserial -out c.pem",
			"openssl x509 -req -in r.csr -CAcreateserial -CA " + other + "/ca.pem -CAkey k.pem -out c.pem",
			"openssl x509 -req -in r.csr --CA=" + other + "/ca.crt -CAkey k.pem --CAcreateserial -out c.pem",
			"openssl x509 -req -in r.csr -CA " + other + "/ca -CAkey k.pem -CAcreateserial -out c.pem",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"openssl x509 -req -in r.csr -CA ca.pem -CAkey k.pem -CAcreateserial -out c.pem -days 1",
			"openssl x509 -req -in r.csr -CA certs/ca.pem -CAkey certs/k.pem -CAcreateserial -out c.pem",
			"openssl x509 -req -in r.csr -CA " + other + "/ca.pem -CAkey k.pem -CAserial ca.srl -CAcreateserial -out c.pem",
			"openssl verify -CAfile " + other + "/ca.pem c.pem",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
