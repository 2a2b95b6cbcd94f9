package bus_test

import (
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
)

// holdRetryWait gives c a retry_after_ms timer that never fires, so a
// call waiting before it is sent again waits until something else ends
// the wait. Each wait sends its length on the channel returned, as it
// begins (once the call is registered as one that may be retried).
func holdRetryWait(t *testing.T, c *bus.Client) <-chan time.Duration {
	t.Helper()
	waits := make(chan time.Duration, 8)
	bus.SetRetryTimer(c, func(d time.Duration) (<-chan time.Time, func() bool) {
		waits <- d
		return make(chan time.Time), func() bool { return true }
	})
	return waits
}
