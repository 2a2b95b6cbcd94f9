package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestConnSettingsCombinedSaid: --config takes the file's nats settings
// and NATS_URL (or --nats) replaces its urls only, so its TLS CA stays.
// Against a server without TLS the connection failed with nats.go's
// "secure connection not available" alone, which said neither that TLS
// came from the file nor that the URL came from the variable. The error
// now names each setting combined and where it came from.
func TestConnSettingsCombinedSaid(t *testing.T) {
	s := natstest.Embedded(t, true) // no TLS
	dir := t.TempDir()
	ca, _, _ := natstest.WriteServerTLS(t, dir)
	cfg := filepath.Join(dir, "worker.yaml")
	yaml := "nats:\n  urls:\n    - nats://10.0.0.1:4222\n  tls:\n    ca: " + ca + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_URL", s.ClientURL())
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--config", cfg, "tools"}, strings.NewReader(""), &out, &errb)
	se := errb.String()
	for _, want := range []string{
		s.ClientURL() + " from env NATS_URL",
		"nats.tls.ca " + ca + " from --config " + cfg,
		"does not offer TLS",
	} {
		if !strings.Contains(se, want) {
			t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
		}
	}
	if code != exitNoNATS {
		t.Fatalf("exit %d, want %d:\n%s", code, exitNoNATS, se)
	}
}

// TestConnDefaultURLNotFromConfig: a --config file without urls leaves
// the URL at the default, but a failed connection counted that URL as
// the file's: with the file's TLS CA it said nothing of the two being
// combined, and with a CA given by flag it said the URL came "from
// --config FILE", though the file never named a server. The default URL
// is said to be the default.
func TestConnDefaultURLNotFromConfig(t *testing.T) {
	dir := t.TempDir()
	ca, _, _ := natstest.WriteServerTLS(t, dir)
	cfg := filepath.Join(dir, "worker.yaml")
	// No urls, no embedded.listen: toolctl dials the default URL, and
	// whatever answers there cannot pass for a server of this fresh CA.
	if err := os.WriteFile(cfg, []byte("nats:\n  tls:\n    ca: "+ca+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--config", cfg, "tools"}, strings.NewReader(""), &out, &errb)
	se := errb.String()
	for _, want := range []string{
		defaultURL + " from the default",
		"nats.tls.ca " + ca + " from --config " + cfg,
	} {
		if !strings.Contains(se, want) {
			t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
		}
	}
	if code != exitNoNATS {
		t.Fatalf("exit %d, want %d:\n%s", code, exitNoNATS, se)
	}

	// The CA by flag and the default URL: nothing of the file was dialled.
	errb.Reset()
	code = run(context.Background(), []string{"--config", cfg, "--tls-ca", ca, "tools"}, strings.NewReader(""), &out, &errb)
	se = errb.String()
	if code != exitNoNATS || strings.Contains(se, "from --config") || !strings.Contains(se, "cannot connect to NATS at "+defaultURL) {
		t.Fatalf("exit %d, want %d, the default URL and no setting from --config:\n%s", code, exitNoNATS, se)
	}
}

// TestConnTLSSettingsSaid: TLS settings and a URL of one kind of source
// (here both from flags and variables) are not combined, so nothing named
// them when the server offered no TLS: "TLS is set" alone left a CA in a
// variable forgotten in the shell unseen. The error names each TLS
// setting and where it came from.
func TestConnTLSSettingsSaid(t *testing.T) {
	s := natstest.Embedded(t, true) // no TLS
	ca, _, _ := natstest.WriteServerTLS(t, t.TempDir())
	t.Setenv("NATS_CA", ca)
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--nats", s.ClientURL(), "tools"}, strings.NewReader(""), &out, &errb)
	se := errb.String()
	if want := "TLS is set (nats.tls.ca " + ca + " from env NATS_CA), and the server does not offer TLS"; !strings.Contains(se, want) {
		t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
	}
	if code != exitNoNATS {
		t.Fatalf("exit %d, want %d:\n%s", code, exitNoNATS, se)
	}
}

// TestConnSystemRootsSaid: with no TLS settings, a server that requires
// TLS gets it from nats.go by itself, and the handshake failed with
// "certificate signed by unknown authority" alone: nothing said that the
// server asked for TLS, that no CA was set (so the system's roots were
// used), nor where the URL came from. The error says all three.
func TestConnSystemRootsSaid(t *testing.T) {
	_, url := natstest.TLSServer(t)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NATS_") {
			t.Setenv(name, "")
		}
	}
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--nats", url, "tools"}, strings.NewReader(""), &out, &errb)
	se := errb.String()
	for _, want := range []string{
		"x509: certificate signed by unknown authority",
		"the server requires TLS (" + url + " from flag --nats) and no TLS CA is set (--tls-ca, NATS_CA or nats.tls.ca), so the server's certificate was checked against the system's roots",
	} {
		if !strings.Contains(se, want) {
			t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
		}
	}
	if code != exitNoNATS {
		t.Fatalf("exit %d, want %d:\n%s", code, exitNoNATS, se)
	}
}

// TestConnServersEachSaid: with two servers given, one whose certificate
// the system's roots do not verify and a closed port, toolctl said
// nats.go's error of whichever it tried last (its list is shuffled): the
// certificate's, with the note of a server requiring TLS but no word of
// the other, or "no servers available for connection" with no word of
// the certificate. It names each server's failure, with the note of the
// one it concerns.
func TestConnServersEachSaid(t *testing.T) {
	_, tlsURL := natstest.TLSServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + l.Addr().String()
	l.Close()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NATS_") {
			t.Setenv(name, "")
		}
	}
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--nats", closed + "," + tlsURL, "tools"}, strings.NewReader(""), &out, &errb)
	se := errb.String()
	for _, want := range []string{
		"cannot connect to NATS at " + closed + "," + tlsURL + ": " + closed + ": connection refused; ",
		tlsURL + ": nats: tls error: tls: failed to verify certificate: x509: certificate signed by unknown authority " +
			"(the server requires TLS (" + tlsURL + " from flag --nats) and no TLS CA is set",
	} {
		if !strings.Contains(se, want) {
			t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
		}
	}
	if code != exitNoNATS {
		t.Fatalf("exit %d, want %d:\n%s", code, exitNoNATS, se)
	}
}
