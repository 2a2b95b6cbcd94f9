package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestConnSettingsCombinedSaid: --config takes the file's nats settings
// and NATS_URL (or --nats) replaces its urls only, so its TLS CA stays.
// Against a server without TLS the worker retried for two minutes on
// nats.go's "secure connection not available" and then failed with it
// alone, which said neither that TLS came from the file nor that the URL
// came from the variable. It now fails at once, and names each setting
// combined and where it came from, as toolctl does.
func TestConnSettingsCombinedSaid(t *testing.T) {
	s := natstest.Embedded(t, true) // no TLS
	dir := t.TempDir()
	ca, _, _ := natstest.WriteServerTLS(t, dir)
	cfg := filepath.Join(dir, "worker.yaml")
	yaml := "nats:\n  urls:\n    - nats://10.0.0.1:4222\n  tls:\n    ca: " + ca + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NATS_") {
			t.Setenv(name, "")
		}
	}
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("NATS_URL", s.ClientURL())
	var out, errb bytes.Buffer
	code := run([]string{"--config", cfg}, &out, &errb)
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
	if strings.Contains(se, "retrying") {
		t.Fatalf("a server without TLS does not offer it later: want no retries:\n%s", se)
	}
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, se)
	}
}

// TestConnTLSSettingsSaid: TLS settings and a URL of one kind of source
// (here both variables) are not combined, so nothing named them when the
// server offered no TLS: "TLS is set" alone left a CA in a variable
// forgotten in the shell unseen. The error names each TLS setting and
// where it came from.
func TestConnTLSSettingsSaid(t *testing.T) {
	s := natstest.Embedded(t, true) // no TLS
	ca, _, _ := natstest.WriteServerTLS(t, t.TempDir())
	noNATSEnv(t)
	t.Setenv("NATS_URL", s.ClientURL())
	t.Setenv("NATS_CA", ca)
	var out, errb bytes.Buffer
	code := run(nil, &out, &errb)
	se := errb.String()
	if want := "TLS is set (nats.tls.ca " + ca + " from env NATS_CA), and the server does not offer TLS"; !strings.Contains(se, want) {
		t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
	}
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, se)
	}
}
