package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestConnServersEachSaid: with two servers in NATS_URL, one whose
// certificate the system's roots do not verify and a closed port, the
// worker said nats.go's error of whichever it tried last: the
// certificate's, with the note of a server requiring TLS but no word of
// the other, or "no servers available for connection" (and it retried
// for two minutes), with no word of the certificate. The error names
// each server's failure and the note of the one it concerns, and is not
// retried.
func TestConnServersEachSaid(t *testing.T) {
	_, tlsURL := natstest.TLSServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + l.Addr().String()
	l.Close()
	noNATSEnv(t)
	t.Setenv("NATS_URL", tlsURL+","+closed)
	var out, errb bytes.Buffer
	code := run(nil, &out, &errb)
	se := errb.String()
	for _, want := range []string{
		tlsURL + ": nats: tls error: tls: failed to verify certificate: x509: certificate signed by unknown authority " +
			"(the server requires TLS (" + tlsURL + " from env NATS_URL) and no TLS CA is set",
		closed + ": connection refused",
	} {
		if !strings.Contains(se, want) {
			t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
		}
	}
	if strings.Contains(se, "retrying") {
		t.Fatalf("a certificate not verified is not retried:\n%s", se)
	}
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, se)
	}
}
