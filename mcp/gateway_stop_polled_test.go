package mcp

import (
	"strconv"
	"testing"
	"time"
)

// A stream closed for polling whose client never came back was awaited
// for ever: every later stop of a long-running gateway waited its whole
// grace, and the gateway kept one entry per abandoned stream. A stream
// not resumed within polledStale of its last close is forgotten, and at
// most maxPolled are awaited at once.
func TestPolledStreamsForgetAbandoned(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	p := &polledStreams{now: func() time.Time { return now }}
	p.closed("s/1")
	p.closed("s/2")
	p.resumed("s/2")
	if !p.awaiting() {
		t.Fatal("a stream closed a moment ago is not awaited")
	}
	now = now.Add(polledStale / 2)
	p.closed("s/1") // closed again after a resume not yet noted: its clock starts again
	now = now.Add(polledStale/2 + time.Second)
	if !p.awaiting() {
		t.Fatal("a stream closed again within polledStale is not awaited")
	}
	now = now.Add(polledStale)
	if p.awaiting() {
		t.Fatalf("a stream not resumed %v after its last close is still awaited", polledStale+time.Second)
	}
	if len(p.n) != 0 {
		t.Fatalf("%d streams kept after they were forgotten", len(p.n))
	}

	for i := range maxPolled + 10 {
		p.closed("s/" + strconv.Itoa(i))
	}
	if len(p.n) != maxPolled {
		t.Fatalf("%d streams kept, want at most %d", len(p.n), maxPolled)
	}
	now = now.Add(polledStale + time.Second)
	p.closed("s/new") // the stale ones make room
	if len(p.n) != 1 || p.n["s/new"].n != 1 {
		t.Fatalf("%d streams kept after the stale ones went, want the new one alone", len(p.n))
	}
}
