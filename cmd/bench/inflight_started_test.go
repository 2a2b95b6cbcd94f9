package main

import (
	"context"
	"io"
	"testing"
	"time"
)

// The inflight point read memory half a --sleep after its calls were
// handed to their goroutines, whether or not the workers had started
// them: calls still queued (not yet sent, or waiting for a slot) were
// counted in flight. Memory is now read once every call has been seen
// started by its worker (or has ended). Here one slot runs the three
// calls one after the other: they cannot all be running at once, and
// the point must say so rather than count them all in flight.
func TestInFlightReadsWhenEveryCallStarted(t *testing.T) {
	cfg, err := parseFlags([]string{"-s", "sleep", "--systems", "toolbus", "--slots", "1", "-c", "1", "-n", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Past the flag checks (which refuse fewer slots than calls): the
	// state a loaded run reaches when its calls start late.
	cfg.inflight, cfg.sleep = 3, time.Second
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	e, err := newEnv(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	sc, err := buildScenario(ctx, e, "inflight")
	if err != nil {
		t.Fatal(err)
	}
	p, err := measureInFlight(ctx, e, sc.series[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	// The first call ended a whole sleep before the third could start.
	if p.OK != 3 || p.Errors["ended_before_measured"] < 1 {
		t.Errorf("%d ok, errors %v: want all 3 ok, and those that ended before the last started counted ended_before_measured", p.OK, p.Errors)
	}
}
