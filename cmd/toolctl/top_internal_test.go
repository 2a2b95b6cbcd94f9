package main

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/nats-io/nats.go/micro"
)

// TestTopRates: rates over the interval from two rounds, across a worker
// that restarted, one that answered only the second round, and a tool
// whose counters started again.
func TestTopRates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	since := t0.Add(time.Hour)
	ep := func(name string, n, errs int, took time.Duration) *micro.EndpointStats {
		return &micro.EndpointStats{Name: name, NumRequests: n, NumErrors: errs, ProcessingTime: took}
	}
	stats := func(id string, started time.Time, eps ...*micro.EndpointStats) micro.Stats {
		return micro.Stats{ServiceIdentity: micro.ServiceIdentity{ID: id}, Started: started, Endpoints: eps}
	}
	before := map[string]micro.Stats{
		"steady":    stats("steady", t0, ep("echo", 100, 1, time.Second), ep("sleep", 50, 0, time.Second)),
		"restarted": stats("restarted", t0, ep("echo", 1000, 0, time.Second)),
	}
	after := map[string]micro.Stats{
		"steady":    stats("steady", t0, ep("echo", 120, 3, time.Second+20*time.Millisecond), ep("sleep", 5, 0, time.Millisecond)), // sleep re-added
		"restarted": stats("restarted", since.Add(time.Second), ep("echo", 10, 0, 10*time.Millisecond)),                            // started within the interval
		"old":       stats("old", t0, ep("echo", 5000, 0, time.Minute)),                                                            // missed the first round
	}
	got := map[string]toolRow{}
	for _, r := range rows(before, after, since, 2*time.Second) {
		got[r.tool] = r
	}
	echo, sleep := got["echo"], got["sleep"]
	// echo: 20 (steady) + 10 (restarted) in 2s; old adds nothing.
	if echo.workers != 3 || echo.calls != 15 || echo.errors != 1 || echo.total != 5130 || echo.avg != time.Millisecond {
		t.Errorf("echo: %+v", echo)
	}
	if sleep.calls != 2.5 || sleep.workers != 1 {
		t.Errorf("sleep (counters started again): %+v", sleep)
	}
}

// TestTopPrintsAnswersPrintable: anyone may answer $SRV.STATS.toolbus, and
// the endpoint names and last errors of the answers went to the
// operator's terminal as they were (only a last error's controls became
// spaces; its bidi overrides stayed, and a tool name kept everything). A
// name with unprintable characters is Go-quoted, a last error's
// unprintable characters are spaces.
func TestTopPrintsAnswersPrintable(t *testing.T) {
	var b strings.Builder
	printTop(&b, 1, time.Second, []toolRow{
		{tool: "echo", workers: 1, lastErr: "boom"},
		{tool: "x\x1b]0;owned\a\u202e", workers: 1, lastErr: "bad\u202eexe\x1b[2J"},
	})
	for _, r := range b.String() {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Fatalf("toolctl top printed %q:\n%s", r, b.String())
		}
	}
	if !strings.Contains(b.String(), `"x\x1b]0;owned\a\u202e"`) || !strings.Contains(b.String(), "bad exe [2J") {
		t.Errorf("the hostile row is not quoted as expected:\n%s", b.String())
	}
}
