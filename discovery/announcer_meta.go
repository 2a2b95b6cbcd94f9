package discovery

import (
	"time"
)

// maxMetaWait bounds how long an announcement waits for a Meta function
// (see metaWait).
const maxMetaWait = time.Second

// metaPart is one Meta function of an Announcer: the value its last call
// returned and the call in flight, if any. Guarded by Announcer.metaMu.
type metaPart struct {
	fn      func() any
	value   any           // JSON-shaped; nil: none yet, nil, or not encodable
	call    chan struct{} // closed when the call in flight returns; nil when none
	started time.Time     // when the call in flight began
	late    bool          // the call in flight was logged as late
}

// metaWait is how long an announcement waits for a Meta function's call:
// the interval, at most maxMetaWait. A worker whose Meta function is
// stuck then announces at most two intervals apart (the fleets' TTL is
// three), once, and on time after that (the stuck call is not waited for
// again).
func (a *Announcer) metaWait() time.Duration { return min(a.opts.Interval, maxMetaWait) }

// refreshMeta calls the Meta functions, each on a goroutine of its own,
// and waits for them up to metaWait after each call began. A function
// whose call is still in flight (one an earlier announcement started) is
// not called again: at most one call of each runs at a time. One that
// has not returned in time is logged, once per call; its last value goes
// out meanwhile, and the announcement that follows its return carries
// the new one (callMeta asks for it). Called without a.mu.
func (a *Announcer) refreshMeta() {
	type pending struct {
		key   string
		p     *metaPart
		call  chan struct{}
		until time.Time
	}
	var wait []pending
	now := time.Now()
	a.metaMu.Lock()
	if a.metaStopped {
		a.metaMu.Unlock()
		return
	}
	for _, key := range a.metaKeys {
		p := a.meta[key]
		if p.call == nil {
			p.call, p.started, p.late = make(chan struct{}), now, false
			a.metaCalls.Add(1)
			go a.callMeta(key, p, p.call)
		}
		wait = append(wait, pending{key: key, p: p, call: p.call, until: p.started.Add(a.metaWait())})
	}
	a.metaMu.Unlock()
	for _, w := range wait {
		if d := time.Until(w.until); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-w.call:
			case <-t.C:
			}
			t.Stop()
		}
		select {
		case <-w.call:
			continue
		default:
		}
		a.metaMu.Lock()
		logIt := w.p.call == w.call && !w.p.late
		if logIt {
			w.p.late = true
		}
		a.metaMu.Unlock()
		if logIt {
			a.log.Warn("discovery: a Meta function has not returned in time: its last value is announced until it does, and it is not called again meanwhile",
				"key", w.key, "waited", a.metaWait())
		}
	}
}

// callMeta runs one call of a Meta function, and keeps its value turned
// into JSON-shaped data (a MarshalJSON is the user's code too).
func (a *Announcer) callMeta(key string, p *metaPart, call chan struct{}) {
	defer a.metaCalls.Done()
	v, err := jsonShaped(p.fn())
	if err != nil {
		a.log.Error("discovery: an announcement part cannot be encoded; left out", "key", key, "err", err)
		v = nil
	}
	a.metaMu.Lock()
	p.value, p.call = v, nil
	late, took := p.late, time.Since(p.started)
	a.metaMu.Unlock()
	close(call)
	if late {
		a.log.Warn("discovery: a late Meta function returned; its value goes out now", "key", key, "took", took)
		select {
		case a.changed <- struct{}{}:
		default:
		}
	}
}

// metaValues are the values the Meta functions last returned, nil when
// there are none.
func (a *Announcer) metaValues() map[string]any {
	a.metaMu.Lock()
	defer a.metaMu.Unlock()
	var out map[string]any
	for key, p := range a.meta {
		if p.value == nil {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(a.meta))
		}
		out[key] = p.value
	}
	return out
}

// stopMeta starts no more calls, and waits for those in flight (however
// long they take).
func (a *Announcer) stopMeta() {
	a.metaMu.Lock()
	a.metaStopped = true
	a.metaMu.Unlock()
	a.metaCalls.Wait()
}
