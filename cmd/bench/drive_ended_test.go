package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestDriveIssuesNothingAfterTheRun: once the run's context has ended
// (an interrupt), the callers start no call, also while their stop (a
// point's time, derived from it) is not yet cancelled: a context's Done
// closes before its children are cancelled, and in that moment a caller
// whose call had just ended on the interrupt started the next one (the
// interrupt test hung on one).
func TestDriveIssuesNothingAfterTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stop, done := context.WithTimeout(context.Background(), time.Second)
	defer done()
	var calls atomic.Int64
	drive(ctx, stop, loadSpec{conc: 2}, func(context.Context, int, int) outcome {
		calls.Add(1)
		return outcome{code: "interrupted"}
	}, nil)
	if n := calls.Load(); n > 0 {
		t.Errorf("%d calls started after the run ended", n)
	}
}
