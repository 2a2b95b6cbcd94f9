package main_test

import (
	"strings"
	"testing"
)

// TestDurationOnlyOfCallsThatRan: toolbus_worker_call_duration_seconds
// times the calls that ran, as its HELP says; a call whose input does not
// validate is answered without running (its log line has duration 0) and
// is counted in toolbus_worker_calls_total only. It was timed too.
func TestDurationOnlyOfCallsThatRan(t *testing.T) {
	w, _, get := opsEndpoint(t)
	if _, _, code := toolctl(t, w.url, "call", "echo", `{"text":5}`); code == 0 {
		t.Fatal("echo with a number: exit 0")
	}
	if _, se, code := toolctl(t, w.url, "call", "echo", `{"text":"hi"}`); code != 0 {
		t.Fatalf("echo: exit %d %s", code, se)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`toolbus_worker_calls_total{code="invalid_input",state="error",tool="echo"} 1`,
		`toolbus_worker_call_duration_seconds_count{tool="echo"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(metrics, "toolbus_worker_call"))
		}
	}
}
