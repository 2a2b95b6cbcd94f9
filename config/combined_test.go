package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestSystemRoots: why TLS was used, said for a certificate the system's
// roots did not verify, follows the settings: the server's demand with
// none, the TLS settings with a client certificate, the URL's tls://;
// nothing is said with a CA set.
func TestSystemRoots(t *testing.T) {
	for _, tt := range []struct {
		name    string
		n       NATS
		sources map[string]string
		url     string
		want    string
	}{
		{"none", NATS{URLs: []string{"nats://h:4222"}}, map[string]string{"nats.urls": "env NATS_URL"}, "nats://h:4222",
			"the server requires TLS (nats://h:4222 from env NATS_URL) and no TLS CA is set"},
		{"cert", NATS{URLs: []string{"nats://h:4222"}, TLS: TLS{Cert: "c.pem", Key: "k.pem"}}, map[string]string{"nats.tls.cert": "flag --tls-cert", "nats.tls.key": "flag --tls-key"}, "nats://h:4222",
			"TLS is set (nats.tls.cert c.pem from flag --tls-cert; nats.tls.key k.pem from flag --tls-key) (nats://h:4222 from --config w.yaml) and no TLS CA is set"},
		{"scheme", NATS{}, nil, "tls://127.0.0.1:4222", "the URL asks for TLS (tls://127.0.0.1:4222 from the default)"},
		{"ca", NATS{URLs: []string{"nats://h:4222"}, TLS: TLS{CA: "ca.pem"}}, nil, "nats://h:4222", ""},
		// A "tls://" in a password or a path is no scheme: nats.go dials
		// these without TLS, and it was the server that asked for it.
		{"password", NATS{URLs: []string{"nats://u:tls://p@h:4222"}}, map[string]string{"nats.urls": "env NATS_URL"}, "nats://u:tls://p@h:4222",
			"the server requires TLS (nats://u:***@h:4222 from env NATS_URL)"},
		{"path", NATS{URLs: []string{"nats://h:4222/tls://x"}}, map[string]string{"nats.urls": "env NATS_URL"}, "nats://h:4222/tls://x",
			"the server requires TLS (nats://h:4222/tls://x from env NATS_URL)"},
		// One tls:// URL makes nats.go ask every server of the list for TLS.
		{"list", NATS{URLs: []string{"nats://h:4222", "tls://g:4222"}}, map[string]string{"nats.urls": "flag --nats"}, "nats://h:4222",
			"another URL of the list asks for TLS (tls://g:4222), which nats.go then asks of every server of it (nats://h:4222 from flag --nats)"},
		{"list scheme", NATS{URLs: []string{"nats://h:4222", "TLS://g:4222"}}, map[string]string{"nats.urls": "flag --nats"}, "TLS://g:4222",
			"the URL asks for TLS (TLS://g:4222 from flag --nats)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := "w.yaml"
			if tt.name == "scheme" {
				file = ""
			}
			got := SystemRoots(tt.n, file, tt.sources, tt.url, "")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want it to say %q", got, tt.want)
			}
		})
	}
}

// TestConnNote: what a failed connection to one server says of its likely
// cause follows the error: TLS asked of a server that offers none names
// what asked for it, a certificate not verified with no CA set says
// SystemRoots's text, and anything else says nothing.
func TestConnNote(t *testing.T) {
	verify := fmt.Errorf("%w: %w", nats.ErrTLS, &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}})
	for _, tt := range []struct {
		name    string
		n       NATS
		sources map[string]string
		url     string
		err     error
		want    string
	}{
		{"ca", NATS{URLs: []string{"nats://h:4222"}, TLS: TLS{CA: "ca.pem"}}, map[string]string{"nats.tls.ca": "env NATS_CA"}, "nats://h:4222",
			nats.ErrSecureConnWanted, "TLS is set (nats.tls.ca ca.pem from env NATS_CA), and the server does not offer TLS"},
		{"other url", NATS{URLs: []string{"nats://h:4222", "tls://g:4222"}}, nil, "nats://h:4222",
			nats.ErrSecureConnWanted, "another URL of the list asks for TLS (tls://g:4222), which nats.go then asks of every server of it, and the server does not offer TLS"},
		{"roots", NATS{URLs: []string{"nats://h:4222"}}, map[string]string{"nats.urls": "env NATS_URL"}, "nats://h:4222",
			verify, "the server requires TLS (nats://h:4222 from env NATS_URL) and no TLS CA is set"},
		{"roots with ca", NATS{URLs: []string{"nats://h:4222"}, TLS: TLS{CA: "ca.pem"}}, nil, "nats://h:4222", verify, ""},
		{"refused", NATS{URLs: []string{"tls://h:4222"}}, nil, "tls://h:4222", nats.ErrNoServers, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ConnNote(tt.n, "", tt.sources, tt.url, "", tt.err)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want it to say %q", got, tt.want)
			}
		})
	}
}
