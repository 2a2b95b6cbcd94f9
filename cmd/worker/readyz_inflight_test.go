package main_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadyzAtMaxInFlight: a worker running max_in_flight calls stays
// ready (the queue group, not /readyz, spreads calls; see ops), answers
// further calls overloaded, and counts them in
// toolbus_worker_overloaded_total and toolbus_worker_calls_total; the
// metrics page stays valid exposition.
func TestReadyzAtMaxInFlight(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "w.yaml")
	mustWrite(t, cfg, "middleware:\n  max_in_flight: 1\n")
	w, _, get := opsEndpoint(t, "--config", cfg)
	sleep := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":30}`)
	if _, ok := sleep.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress:\n%s", sleep.stderr)
	}
	if _, se, code := toolctl(t, w.url, "call", "echo", `{"text":"x"}`); code != 1 || !strings.Contains(se, "overloaded") {
		t.Fatalf("echo: exit %d %s", code, se)
	}
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz at max_in_flight: %d %q, want 200 ready", code, body)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{"toolbus_worker_calls_in_flight 1\n", `toolbus_worker_calls_total{code="overloaded",state="error",tool="echo"} `} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(metrics, "toolbus_worker"))
		}
	}
	if strings.Contains(metrics, "toolbus_worker_overloaded_total 0\n") {
		t.Errorf("toolbus_worker_overloaded_total did not count the overloaded calls:\n%s", grepLines(metrics, "overloaded"))
	}
	promtoolCheck(t, metrics)
	sleep.cmd.Process.Signal(syscall.SIGINT)
	sleep.exit(t)
}
