package main

import (
	"context"
	"testing"
	"time"
)

// An open-loop point cut into rounds started each round's schedule anew,
// with a call at its start: a rate that fits 1.5 calls in a round sent
// 2 in each, and --rate 6 over -d 1s in 4 rounds made 8 calls, not 6.
// (At 4 calls a second, a round of 250ms sent 1 or 2, as the call due
// at its end raced its timer.) The rounds now take their turns of one
// schedule over the point, so the point sends the calls of its rate.
func TestOpenLoopRoundsSendTheRate(t *testing.T) {
	mk := func(name string) series {
		return series{system: name, call: func(context.Context, int, int) outcome { return outcome{} }}
	}
	for _, rate := range []float64{6, 4} { // 1.5 calls a round; 1, the next due at the round's end
		e := &env{cfg: &config{dur: time.Second, rounds: 4, rate: rate}, fleet: &localFleet{}}
		sc := &scenario{name: "echo"}
		for _, p := range measureGroup(context.Background(), e, sc, []series{mk("a"), mk("b")}, 4, nil) {
			if want := int64(rate); p.Calls != want || p.OK != want {
				t.Errorf("%s: %d calls (%d ok) at --rate %v over 1s in 4 rounds, want %d", p.System, p.Calls, p.OK, rate, want)
			}
			// Each round lasts its 250ms at least, whenever its last
			// call went: the calls/s are never above the rate.
			if p.CallsPerSec > rate {
				t.Errorf("%s: %.2f calls/s over %.3fs at --rate %v", p.System, p.CallsPerSec, p.Seconds, rate)
			}
		}
	}
}
