package loglimit

import (
	"testing"
	"time"
)

// At most perSecond lines a second; the first line of the next second
// says how many were left out; a clock set back starts a new second.
func TestTake(t *testing.T) {
	var l Limit
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if left, ok := l.Take(3, t0); !ok || left != 0 {
			t.Fatalf("line %d: %d, %v; want it written", i, left, ok)
		}
	}
	for range 5 {
		if _, ok := l.Take(3, t0.Add(999*time.Millisecond)); ok {
			t.Fatal("a fourth line within the second was written")
		}
	}
	if left, ok := l.Take(3, t0.Add(time.Second)); !ok || left != 5 {
		t.Fatalf("the next second's first line: %d, %v; want written, saying 5 left out", left, ok)
	}
	l.Take(3, t0.Add(time.Second))
	l.Take(3, t0.Add(time.Second))
	if left, ok := l.Take(3, t0); !ok || left != 0 {
		t.Fatalf("after the clock was set back: %d, %v; want a new second", left, ok)
	}
}
