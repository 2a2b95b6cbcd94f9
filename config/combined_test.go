package config

import (
	"strings"
	"testing"
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
