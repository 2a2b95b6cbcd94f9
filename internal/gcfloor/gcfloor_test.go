package gcfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var sink []byte

// churn allocates n bytes of garbage in 1 KiB pieces and reports how many
// collections ran meanwhile.
func churn(n int) uint64 {
	before := read("/gc/cycles/total:gc-cycles")
	for range n / 1024 {
		sink = make([]byte, 1024)
	}
	return read("/gc/cycles/total:gc-cycles") - before
}

// TestFloor: with a floor of 32 MiB over a small live heap, 128 MiB of
// garbage is collected about four times, not every few MiB; stopping restores
// GOGC=100.
func TestFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	runtime.GC()
	without := churn(128 << 20)

	stop := Start(32 << 20)
	runtime.GC() // the first adjustment
	runtime.GC()
	if p := read("/gc/gogc:percent"); p <= 100 {
		t.Fatalf("GOGC %d after a collection of a small heap, want more than 100", p)
	}
	with := churn(128 << 20)
	t.Logf("collections for 128 MiB of garbage: %d by default, %d with the floor", without, with)
	if with < 2 || with > 8 || with*3 > without {
		t.Fatalf("%d collections with the floor (%d without), want a few", with, without)
	}
	stop()
	if p := read("/gc/gogc:percent"); p != 100 {
		t.Fatalf("GOGC %d after stop, want 100", p)
	}
}

// TestOperatorChoice: GOGC or GOMEMLIMIT in the environment leaves the
// collector alone.
func TestOperatorChoice(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			stop := Start(32 << 20)
			defer stop()
			runtime.GC()
			runtime.GC()
			if p := read("/gc/gogc:percent"); p != 100 {
				t.Fatalf("GOGC %d with %s set, want it untouched (100)", p, env)
			}
		})
	}
}

// TestStopWins: a stop racing the adjustment after a collection leaves
// GOGC at 100, never raised.
func TestStopWins(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	for i := range 500 {
		stop := Start(64 << 20)
		done := make(chan struct{})
		go func() { runtime.GC(); close(done) }()
		for range i % 50 {
			runtime.Gosched()
		}
		stop()
		<-done
		runtime.GC()
		runtime.GC()
		if p := read("/gc/gogc:percent"); p != 100 {
			t.Fatalf("run %d: GOGC %d after stop, want 100", i, p)
		}
	}
}
