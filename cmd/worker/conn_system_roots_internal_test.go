package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestConnSystemRootsSaid: a worker with no TLS settings dialling a
// server that requires TLS is upgraded to TLS by nats.go, whose handshake
// then fails with "certificate signed by unknown authority" alone: it
// said neither that the server asked for TLS, nor that no CA was set (so
// the system's roots were used), nor where the URL came from. The error
// says all three; it is still not retried.
func TestConnSystemRootsSaid(t *testing.T) {
	_, url := natstest.TLSServer(t)
	noNATSEnv(t)
	t.Setenv("NATS_URL", url)
	var out, errb bytes.Buffer
	code := run(nil, &out, &errb)
	se := errb.String()
	for _, want := range []string{
		"x509: certificate signed by unknown authority",
		"the server requires TLS (" + url + " from env NATS_URL) and no TLS CA is set (--tls-ca, NATS_CA or nats.tls.ca), so the server's certificate was checked against the system's roots",
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
