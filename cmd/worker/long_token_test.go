package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongTokenStopsAtOnce: credentials that make the CONNECT line longer
// than the server's max_control_line are refused on every try: the
// worker stops at once saying so, instead of retrying for its start wait.
func TestLongTokenStopsAtOnce(t *testing.T) {
	w := startWorker(t)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	body := "nats:\n  urls: [\"" + w.url + "\"]\n  token: \"" + strings.Repeat("t", 5000) + "\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, cleanEnv(t), workerBin, "--config", cfg, "--instance", "long-token")
	code := p.exit(t)
	out := strings.TrimSpace(p.stderr.String())
	if code == 0 || strings.Contains(out, "retrying") || !strings.Contains(out, "max_control_line") {
		t.Fatalf("exit %d, want a failure at once naming max_control_line, without retries:\n%s", code, out)
	}
}
