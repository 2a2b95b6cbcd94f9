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
