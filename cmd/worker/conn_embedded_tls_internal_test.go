package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestEmbeddedTLSNotOffered: with TLS settings and no NATS URL the worker
// runs its embedded server, which has no TLS unless its server_config
// gives it some, and connects to it in process with those settings: it
// failed with nats.go's "secure connection not available" alone, saying
// neither which TLS settings nor where they came from, and --check-config
// passed. Both now refuse the configuration, naming each TLS setting and
// where it came from, and what the settings are for.
func TestEmbeddedTLSNotOffered(t *testing.T) {
	dir := t.TempDir()
	ca, _, _ := natstest.WriteServerTLS(t, dir)
	cfg := filepath.Join(dir, "worker.yaml")
	yaml := "nats:\n  tls:\n    ca: " + ca + "\nembedded:\n  listen: 127.0.0.1:0\n  store_dir: " + filepath.Join(dir, "js") + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	noNATSEnv(t)
	for _, tt := range []struct {
		name string
		args []string
		env  string // NATS_CA
		from string
	}{
		{"file", []string{"--config", cfg}, "", "nats.tls.ca " + ca + " from --config " + cfg},
		{"file check", []string{"--config", cfg, "--check-config"}, "", "nats.tls.ca " + ca + " from --config " + cfg},
		{"variable", []string{"--listen", "127.0.0.1:0", "--store-dir", filepath.Join(dir, "js2")}, ca, "nats.tls.ca " + ca + " from env NATS_CA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NATS_CA", tt.env)
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			se := errb.String()
			for _, want := range []string{tt.from, "no NATS URL", "embedded server, which offers no TLS", "server_config"} {
				if !strings.Contains(se, want) {
					t.Fatalf("exit %d, want the error to say %q:\n%s", code, want, se)
				}
			}
			if code != exitUsage {
				t.Fatalf("exit %d, want %d:\n%s", code, exitUsage, se)
			}
		})
	}
}

// TestEmbeddedTLSOffered: an embedded server given TLS by its
// server_config is joined in process with the worker's TLS settings (a
// file shared with toolctl, which dials embedded.listen with them).
func TestEmbeddedTLSOffered(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := natstest.WriteServerTLS(t, dir)
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("tls {\n  cert_file: \""+cert+"\"\n  key_file: \""+key+"\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	yaml := "nats:\n  tls:\n    ca: " + ca + "\nembedded:\n  listen: 127.0.0.1:0\n  store_dir: " + filepath.Join(dir, "js") + "\n  server_config: " + conf + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	noNATSEnv(t)
	f, err := parseFlags([]string{"--config", cfg}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEmbedded(c, "nats.tls.ca "+ca); err != nil {
		t.Fatalf("checkEmbedded: %v", err)
	}
	r, err := start(context.Background(), c, "tls1", 0, "", connSaid{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	r.close()
}

// noNATSEnv clears the NATS_ variables and gives the test its own data
// directory.
func noNATSEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NATS_") {
			t.Setenv(name, "")
		}
	}
	t.Setenv("XDG_DATA_HOME", t.TempDir())
}
