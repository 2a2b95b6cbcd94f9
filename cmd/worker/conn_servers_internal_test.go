package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestConnServersEachSaid: with two servers in NATS_URL whose
// certificates the system's roots do not verify, the worker said
// nats.go's error of whichever it tried last, with the note of that
// server alone. The error names each server's failure and the note of
// each, and is not retried: no server will take the connection by
// waiting (one that does not answer yet is waited for:
// TestConnServersWaitsForOthers).
func TestConnServersEachSaid(t *testing.T) {
	_, tls1 := natstest.TLSServer(t)
	_, tls2 := natstest.TLSServer(t)
	noNATSEnv(t)
	t.Setenv("NATS_URL", tls1+","+tls2)
	var out, errb bytes.Buffer
	code := run(nil, &out, &errb)
	se := errb.String()
	for _, url := range []string{tls1, tls2} {
		want := url + ": nats: tls error: tls: failed to verify certificate: x509: certificate signed by unknown authority " +
			"(the server requires TLS (" + url + " from env NATS_URL) and no TLS CA is set"
		if !strings.Contains(se, want) {
			t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
		}
	}
	if strings.Contains(se, "retrying") {
		t.Fatalf("certificates not verified are not retried:\n%s", se)
	}
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, se)
	}
}
