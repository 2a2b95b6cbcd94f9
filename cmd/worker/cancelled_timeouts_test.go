package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCancelledCountsMiddlewareTimeouts: toolbus_worker_cancelled_calls_total
// counts the calls a deadline ended, the worker's own (middleware.timeouts)
// as well as the caller's (Toolbus-Timeout).
func TestCancelledCountsMiddlewareTimeouts(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, "middleware:\n  timeouts:\n    sleep: 300ms\n")
	w, _, get := opsEndpoint(t, "--config", cfg)
	// The worker's timeout for sleep ends this call.
	if out, se, code := toolctl(t, w.url, "call", "sleep", `{"seconds":30}`); code == 0 {
		t.Fatalf("sleep past the worker's timeout: exit 0 %q %s", out, se)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`toolbus_worker_calls_total{code="timeout",state="error",tool="sleep"} 1`,
		`toolbus_worker_cancelled_calls_total 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(metrics, "toolbus_worker_c"))
		}
	}
}
