package bus

import (
	"testing"
	"time"
)

// SetBindWait sets how long a worker binds the cancels and exhausted
// streams before it goes on without them (5 s), for t's duration: a test
// holds a bind under way (long) or has it give up at once (short).
func SetBindWait(t testing.TB, d time.Duration) {
	old := streamsBindWait.Swap(int64(d))
	t.Cleanup(func() { streamsBindWait.Store(old) })
}

// SetRetryTimer has c make the timer of each wait for an overloaded
// attempt's retry_after_ms with f (its channel and its stop) in place of
// time.NewTimer: a test holds the wait open, or ends it, itself. Set it
// before c's first call.
func SetRetryTimer(c *Client, f func(time.Duration) (<-chan time.Time, func() bool)) {
	c.retryTimer = f
}

// DurableLoops is how many durable pull loops w runs, those of tools
// removed (which end after their batch) included.
func DurableLoops(w *Worker) int {
	d := w.dur
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}
