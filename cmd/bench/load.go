package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// outcome is what one call reports back to the load loop.
type outcome struct {
	// code is "" for a correct call, else an error code: the final's
	// code, or one of the bench's own (bad_content, no_final, ...).
	code string
	// lat, when set, replaces the latency the loop measured (cancel
	// measures from the cancel, not from the call).
	lat time.Duration
	// extra is a second latency some scenarios report (cancel: to the
	// tool's ctx.Done; groups: the call after reset_tools).
	extra time.Duration
	// units delivered by the call (chunks for stream); 0 means 1.
	units int
	// cross: the call ran on another worker than the one before it
	// (groups).
	cross bool
	// again: the call was sent (or delivered) more than once and ended
	// well (fault).
	again bool
}

// callFunc makes one call. g is the caller goroutine, i its call number.
type callFunc func(ctx context.Context, g, i int) outcome

// loadSpec says how hard and how long to drive a callFunc.
type loadSpec struct {
	conc   int
	dur    time.Duration
	calls  int // > 0: stop after this many calls instead of dur
	warmup time.Duration
	rate   float64 // calls/s in total; 0 = closed loop
	// phase is where this round starts in its point's one schedule
	// (open loop, measured for dur): the round sends the calls scheduled
	// in [phase, phase+dur), so the rounds of a point together send what
	// one round of all their time would, not a call at each start.
	phase time.Duration
}

// loadResult is the raw measurement of one run.
type loadResult struct {
	elapsed time.Duration
	calls   int64
	units   int64
	cross   int64
	again   int64
	errors  map[string]int64
	lats    []time.Duration // successful calls, sorted
	extras  []time.Duration // sorted
}

type sampler struct {
	lats, extras []time.Duration
	errors       map[string]int64
	calls, units int64
	cross, again int64
}

func (s *sampler) add(o outcome, lat time.Duration) {
	s.calls++
	if o.code != "" {
		if s.errors == nil {
			s.errors = map[string]int64{}
		}
		s.errors[o.code]++
		return
	}
	if o.lat > 0 {
		lat = o.lat
	}
	s.lats = append(s.lats, lat)
	if o.extra > 0 {
		s.extras = append(s.extras, o.extra)
	}
	s.units += int64(max(o.units, 1))
	if o.cross {
		s.cross++
	}
	if o.again {
		s.again++
	}
}

// runLoad drives call with spec.conc goroutines: closed loop (each calls
// again as soon as its call ends) or, with a rate, open loop (calls are
// scheduled at fixed times and their latency counts from the scheduled
// time, so a system that falls behind shows its queueing). done is
// incremented once per finished measured call, for the progress bar.
// The warm-up, when spec has one, runs first; measured starts the
// measurement after it (nil: nothing to do).
func runLoad(ctx context.Context, spec loadSpec, call callFunc, done *atomic.Int64, measured func()) loadResult {
	conc := max(spec.conc, 1)
	if spec.warmup > 0 {
		wctx, cancel := context.WithTimeout(ctx, spec.warmup)
		drive(ctx, wctx, loadSpec{conc: conc, rate: spec.rate}, call, nil)
		cancel()
	}
	if measured != nil {
		measured()
	}
	mctx := ctx
	if spec.calls <= 0 {
		var cancel context.CancelFunc
		mctx, cancel = context.WithTimeout(ctx, spec.dur)
		defer cancel()
	}
	start := time.Now()
	samplers := drive(ctx, mctx, spec, call, done)
	res := loadResult{elapsed: time.Since(start), errors: map[string]int64{}}
	for _, s := range samplers {
		res.calls += s.calls
		res.units += s.units
		res.cross += s.cross
		res.again += s.again
		for k, v := range s.errors {
			res.errors[k] += v
		}
		res.lats = append(res.lats, s.lats...)
		res.extras = append(res.extras, s.extras...)
	}
	slices.Sort(res.lats)
	slices.Sort(res.extras)
	return res
}

// drive runs the callers until stop (done, or spec.calls issued) and
// returns one sampler per caller. The calls themselves get ctx, which
// outlives stop: a call in flight when the time is up is finished and
// counted, never cut; ctx ends only with the run (an interrupt), and the
// calls with it.
func drive(ctx, stop context.Context, spec loadSpec, call callFunc, done *atomic.Int64) []*sampler {
	conc := max(spec.conc, 1)
	var issued atomic.Int64
	next := func() bool {
		// ctx too: its Done closes before its children (stop) are
		// cancelled, and a call that just ended on an interrupt must not
		// start another in that moment.
		if stop.Err() != nil || ctx.Err() != nil {
			return false
		}
		return spec.calls <= 0 || issued.Add(1) <= int64(spec.calls)
	}
	var tickets chan time.Time
	if spec.rate > 0 {
		tickets = make(chan time.Time)
		go func() {
			defer close(tickets)
			start := time.Now()
			// sched is the k-th call's time in the point's schedule; a
			// call belongs to the round whose [phase, phase+dur) holds
			// it, the same function deciding for every round.
			sched := func(k int64) time.Duration { return time.Duration(float64(k) * float64(time.Second) / spec.rate) }
			windowed := spec.calls <= 0 && spec.dur > 0
			// A round measured for dur sends the calls of its stretch by
			// the schedule, not by its timer (started a moment before
			// this clock): a late wake-up still sends a call that was
			// due, when a caller is free to take it.
			waitStop := stop.Done()
			if windowed {
				waitStop = nil
			}
			k := max(int64(spec.phase.Seconds()*spec.rate)-1, 0)
			for sched(k) < spec.phase {
				k++
			}
			for ; ; k++ {
				off := sched(k) - spec.phase
				if windowed && off >= spec.dur {
					// The round's last call is out; the round still lasts
					// its time, the measure of its calls/s.
					<-stop.Done()
					return
				}
				if windowed && ctx.Err() != nil || !windowed && !next() {
					return
				}
				at := start.Add(off)
				if d := time.Until(at); d > 0 {
					select {
					case <-time.After(d):
					case <-waitStop:
						return
					case <-ctx.Done():
						return
					}
				}
				select {
				case tickets <- at:
					continue
				default:
				}
				select {
				case tickets <- at:
				case <-stop.Done():
					return
				}
			}
		}()
	}
	samplers := make([]*sampler, conc)
	var wg sync.WaitGroup
	for g := range conc {
		s := &sampler{}
		samplers[g] = s
		wg.Go(func() {
			for i := 0; ; i++ {
				var t0 time.Time
				if tickets != nil {
					at, ok := <-tickets
					if !ok {
						return
					}
					t0 = at
				} else {
					if !next() {
						return
					}
					t0 = time.Now()
				}
				o := call(ctx, g, i)
				s.add(o, time.Since(t0))
				if done != nil {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return samplers
}

// percentile of sorted durations, q in (0, 1]; 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
