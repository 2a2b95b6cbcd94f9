package bus_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// retryAfterMost is the longest retry_after_ms a client waits out
// itself (ClientOptions.MaxAttempts; a longer one ends the call): a
// test's tool asks for it, leaving the test as much time as the client
// allows before its wait is over.
const retryAfterMost = 2 * time.Second

// waitRetryWait waits until a goroutine of a client waits out an
// attempt's retry_after_ms: it is blocked in a select whose frame is
// Client.retry's own, which is the wait (its other select does not block;
// what else it waits for runs in frames of its own).
func waitRetryWait(t *testing.T) {
	t.Helper()
	natstest.WaitFor(t, "the client to wait out retry_after_ms", func() bool {
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) {
				buf = buf[:n]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		for _, g := range strings.Split(string(buf), "\n\n") {
			head, frames, _ := strings.Cut(g, "\n")
			if strings.Contains(head, "[select") && strings.HasPrefix(frames, "github.com/toolbus/toolbus/bus.(*Client).retry(") {
				return true
			}
		}
		return false
	})
}
