package discovery

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// announcementMsg is ann as the fleet's subscription receives it.
func announcementMsg(t testing.TB, ann wire.Announcement) *nats.Msg {
	t.Helper()
	data, err := wire.JSON.Marshal(&ann)
	if err != nil {
		t.Fatal(err)
	}
	return &nats.Msg{Subject: wire.AnnounceSubject(ann.Instance), Header: wire.JSON.Header(), Data: data}
}

// retireRuns has instance id run runs runs, one after the other, the
// last ending by its goodbye: the fleet remembers them all as ended, for
// the TTL of intervalMS.
func retireRuns(t testing.TB, f *Fleet, id string, runs int, intervalMS int64) {
	t.Helper()
	for e := range int64(runs) {
		f.apply(announcementMsg(t, wire.Announcement{Format: 1, Instance: id, EpochMS: e + 1, Seq: 1, IntervalMS: intervalMS}), time.Now())
	}
	f.apply(announcementMsg(t, wire.Announcement{Format: 1, Instance: id, EpochMS: int64(runs), Seq: 2, IntervalMS: intervalMS, Goodbye: true}), time.Now())
}

// TestRetiredRunsBounded: instances that came and went (a churning fleet,
// or a neighbour announcing and saying goodbye under ids it invents,
// asking for the longest TTL) are remembered as ended at most
// maxRetired runs in all, and only for their TTL: every ended run of an
// instance once seen was kept for its TTL, up to three hours, however
// many there were.
func TestRetiredRunsBounded(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	const ids = maxRetired/retiredPerInstance + 100
	for i := range ids {
		retireRuns(t, f, fmt.Sprintf("gone-%d", i), retiredPerInstance, MaxInterval.Milliseconds())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, rs := range f.retired {
		n += len(rs)
	}
	if n > maxRetired {
		t.Errorf("%d ended runs of %d instances remembered, want at most %d", n, ids, maxRetired)
	}
	if last := fmt.Sprintf("gone-%d", ids-1); len(f.retired[last]) != retiredPerInstance {
		t.Errorf("the last instance's ended runs: %d remembered, want %d", len(f.retired[last]), retiredPerInstance)
	}
	f.pruneRetired(time.Now().Add(DefaultTTLFactor*MaxInterval + time.Second))
	if len(f.retired) != 0 {
		t.Errorf("ended runs of %d instances remembered past their TTL", len(f.retired))
	}
}

// TestRetiredForgottenAtTTL: the fleet forgets an ended run exactly when
// its time is over, as a walk over every remembered run on each message
// did, whatever the order in which runs end, end again or are pushed out
// by their instance's later runs; and what it keeps to find them stays
// within twice what it remembers (as of its last retire).
func TestRetiredForgottenAtTTL(t *testing.T) {
	f := &Fleet{retired: map[string][]retiredRun{}}
	want := map[string][]retiredRun{} // kept as the walk kept them
	retire := func(id string, r run, until time.Time) {
		rs := slices.DeleteFunc(want[id], func(x retiredRun) bool { return x.run == r })
		if len(rs) == retiredPerInstance {
			rs = rs[1:]
		}
		want[id] = append(slices.Clip(rs), retiredRun{run: r, until: until})
	}
	prune := func(now time.Time) {
		for id, rs := range want {
			if rs = slices.DeleteFunc(rs, func(x retiredRun) bool { return now.After(x.until) }); len(rs) == 0 {
				delete(want, id)
			} else {
				want[id] = rs
			}
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	for i := range 20_000 {
		pruned := rnd.IntN(3) == 0
		if pruned {
			now = now.Add(time.Duration(rnd.IntN(2000)) * time.Millisecond)
			f.pruneRetired(now)
			prune(now)
		} else {
			id := fmt.Sprint("w", rnd.IntN(30))
			r := run{incarnation: fmt.Sprint(rnd.IntN(3)), epoch: int64(rnd.IntN(4))}
			until := now.Add(time.Duration(rnd.IntN(300_000)) * time.Millisecond)
			f.retire(id, r, until)
			retire(id, r, until)
		}
		n := 0
		for _, rs := range want {
			n += len(rs)
		}
		if !maps.EqualFunc(f.retired, want, slices.Equal) || f.nRetired != n {
			t.Fatalf("step %d: remembered %v (%d runs counted), want %v", i, f.retired, f.nRetired, want)
		}
		if !pruned && (len(f.retiredBy) > 2*max(n, 64) || len(f.retiredIn) > 2*max(n, 64)) { // a retire drops the marks of replaced runs past that
			t.Fatalf("step %d: %d and %d marks kept for %d ended runs", i, len(f.retiredBy), len(f.retiredIn), n)
		}
	}
}

// BenchmarkApplyWithRetiredRuns: one announcement of a live instance
// applied per op, while the fleet remembers the ended runs of many
// instances that came and went.
func BenchmarkApplyWithRetiredRuns(b *testing.B) {
	for _, gone := range []int{0, 1000, 4000} {
		b.Run(fmt.Sprintf("gone=%d", gone), func(b *testing.B) {
			s := natstest.Server(b)
			f := startFleet(b, natstest.Conn(b, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			for i := range gone {
				retireRuns(b, f, fmt.Sprintf("gone-%d", i), retiredPerInstance, MaxInterval.Milliseconds())
			}
			ann := wire.Announcement{Format: 1, Instance: "live", EpochMS: 1, IntervalMS: MaxInterval.Milliseconds()}
			msgs := make([]*nats.Msg, 1024)
			for i := range msgs {
				ann.Seq = uint64(i + 1)
				msgs[i] = announcementMsg(b, ann)
			}
			b.ResetTimer()
			for i := range b.N {
				if i%len(msgs) == 0 && i > 0 {
					b.StopTimer()
					ann.EpochMS++ // a new run: the seqs start over
					for j := range msgs {
						ann.Seq = uint64(j + 1)
						msgs[j] = announcementMsg(b, ann)
					}
					b.StartTimer()
				}
				f.apply(msgs[i%len(msgs)], time.Now())
			}
		})
	}
}
