package main_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestConnRetriesSaySettingsCombined: the worker's connect retries (for
// two minutes, while no server answers) logged nats.go's error alone;
// only the error that ended them said that NATS_URL's URL met the TLS
// settings of --config. Each retry line says so now.
func TestConnRetriesSaySettingsCombined(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("nats://%s", l.Addr())
	l.Close() // nothing answers there
	ca, err := filepath.Abs("../../config/testdata/certs/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte("nats:\n  urls:\n    - nats://10.0.0.1:4222\n  tls:\n    ca: "+ca+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, cleanEnv(t, "NATS_URL="+url), workerBin, "--config", cfg, "--log-format", "json")
	line, ok := p.stderr.wait(func(s string) bool { return strings.Contains(s, "retrying") })
	if !ok {
		t.Fatalf("no retry:\n%s", p.stderr)
	}
	for _, want := range []string{
		`"settings":"these settings were combined: ` + url + " from env NATS_URL",
		"nats.tls.ca " + ca + " from --config " + cfg,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("want the retry line to say %q:\n%s", want, line)
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exit(t); code != 0 {
		t.Errorf("exit %d, want 0 (stopped during its start):\n%s", code, p.stderr)
	}
}
