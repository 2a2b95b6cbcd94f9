// Package loglimit bounds the log lines that others cause at will (a
// caller's forged requests, a client's messages): at most a number a
// second get through, and the first one after some were left out says
// how many.
package loglimit

import (
	"sync"
	"time"
)

// Limit counts the lines of one source. Its zero value is ready; it is
// safe for concurrent use.
type Limit struct {
	mu         sync.Mutex
	window     time.Time
	written    int
	suppressed int
}

// Take reports whether a line may be written at now, at most perSecond
// lines a second, and how many were left out since the last one written.
// A clock set back starts a new second.
func (l *Limit) Take(perSecond int, now time.Time) (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second || now.Before(l.window) {
		l.window, l.written = now, 0
	}
	if l.written >= perSecond {
		l.suppressed++
		return 0, false
	}
	l.written++
	suppressed, l.suppressed = l.suppressed, 0
	return suppressed, true
}
