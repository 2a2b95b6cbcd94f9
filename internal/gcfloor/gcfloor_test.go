package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestMain starts the collector at GOGC=100, the percentage of a process
// started without GOGC, which is the one Start adjusts: the runtime read
// GOGC when the test binary started, and a binary run with GOGC set would
// otherwise fail every test here while testing nothing of Start.
func TestMain(m *testing.M) {
	debug.SetGCPercent(100)
	os.Exit(m.Run())
}

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

// TestFloor: with a floor of 32 MiB over a small live heap (a heap goal of
// 4 MiB by default), Start raises GOGC so that the heap goal lies between
// the floor and twice the floor; 128 MiB of garbage is then collected a few
// times, not every few MiB; stopping restores GOGC=100.
//
// The adjustment runs in a finalizer, on the runtime's goroutine after a
// collection, so the test collects until the goal is in range (bounded)
// rather than assuming two collections suffice. The collections counted
// under churn are bounded loosely and not compared with the default's:
// on a loaded machine a slow cycle marks what was allocated during it,
// the next goal grows with it, and the default's count for 128 MiB falls
// from about 30 to as few as 1.
func TestFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	const floor = 32 << 20
	if p := read("/gc/gogc:percent"); p != 100 {
		t.Fatalf("GOGC %d before Start, want 100", p)
	}
	runtime.GC()
	if goal := read("/gc/heap/goal:bytes"); goal >= floor {
		t.Fatalf("heap goal %d MiB by default, want less than the floor (%d MiB) for the test to mean anything", goal>>20, floor>>20)
	}
	without := churn(128 << 20)

	stop := Start(floor)
	t.Cleanup(stop) // a failure below leaves GOGC at 100 for the tests after
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(time.Millisecond) // the finalizer's turn
		goal := read("/gc/heap/goal:bytes")
		if goal >= floor && goal <= 2*floor {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heap goal %d MiB (GOGC %d) 10 s after Start with a floor of %d MiB, want between the floor and twice it",
				goal>>20, read("/gc/gogc:percent"), floor>>20)
		}
	}
	if p := read("/gc/gogc:percent"); p <= 100 {
		t.Fatalf("GOGC %d with the floor over a small heap, want more than 100", p)
	}
	with := churn(128 << 20)
	t.Logf("collections for 128 MiB of garbage: %d by default, %d with the floor", without, with)
	if with > 8 {
		t.Fatalf("%d collections for 128 MiB of garbage with a floor of 32 MiB, want a few", with)
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
