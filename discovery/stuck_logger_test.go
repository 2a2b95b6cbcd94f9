package discovery

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// stuckHandler is a Logger that never returns from the first record
// whose message says word, until the test ends.
type stuckHandler struct {
	word  string
	stuck chan struct{} // closed when a record is held
	once  sync.Once
	open  <-chan struct{}
}

func (h *stuckHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *stuckHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stuckHandler) WithGroup(string) slog.Handler            { return h }
func (h *stuckHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.word) {
		h.once.Do(func() { close(h.stuck) })
		<-h.open
	}
	return nil
}

// TestStuckLoggerFreezesNothing: a Logger that never returns (a handler
// writing to a full pipe, a hook waiting on a lock) does not freeze the
// fleet's view: a worker that goes away still expires from it, and a new
// worker's announcement is still seen. The fleet logged from its intake
// and under its lock: a stuck record about a malformed announcement held
// every later announcement unread (and an instance with one waiting is
// never expired), one about an expiry held the lock, and with it every
// announcement, expiry and Discover.
func TestStuckLoggerFreezesNothing(t *testing.T) {
	for _, word := range []string{"malformed", "expired"} {
		t.Run(word, func(t *testing.T) {
			s := natstest.Server(t)
			// Released when the test ends, before the cleanups (among them
			// the fleet's Close, which waits for the record in progress).
			h := &stuckHandler{word: word, stuck: make(chan struct{}), open: t.Context().Done()}
			f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), TTL: 300 * time.Millisecond, DiscoverWindow: 100 * time.Millisecond})
			gone := natstest.Conn(t, s)
			startAnnouncer(t, gone, fleetToolkit(t), &AnnouncerOptions{Instance: "gone", Interval: 50 * time.Millisecond})
			natstest.WaitFor(t, "gone listed", func() bool { return listed(f, "gone") })

			// A malformed announcement: logged.
			if word == "malformed" {
				other := natstest.Conn(t, s)
				if err := other.Publish("tools.announce.junk", unreadable); err != nil {
					t.Fatal(err)
				}
				other.Flush()
				select {
				case <-h.stuck:
				case <-time.After(natstest.Guard):
					t.Fatal("the record about the malformed announcement never came")
				}
			}
			// The worker goes away without a goodbye.
			gone.Close()
			natstest.WaitFor(t, "the worker that went away expired from the view", func() bool { return !listed(f, "gone") })
			startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "new", Interval: 50 * time.Millisecond})
			natstest.WaitFor(t, "a new worker seen", func() bool { return listed(f, "new") })
			if err := f.Discover(natstest.Ctx(t)); err != nil {
				t.Fatalf("Discover with the Logger stuck: %v", err)
			}
		})
	}
}

// recordingHandler holds its first record until open is closed, and
// records every message with its "dropped" attribute, if any.
type recordingHandler struct {
	held chan struct{}
	open chan struct{}
	once sync.Once
	mu   sync.Mutex
	msgs []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.once.Do(func() { close(h.held); <-h.open })
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "dropped" {
			msg += " " + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.msgs = append(h.msgs, msg)
	h.mu.Unlock()
	return nil
}

// TestLogQueueCountsDropped: records past the queue while the Logger is
// held are dropped, their count logged once it goes on; the queued ones
// are written, in order, by close.
func TestLogQueueCountsDropped(t *testing.T) {
	h := &recordingHandler{held: make(chan struct{}), open: make(chan struct{})}
	q, log := newLogQueue("fleet", h)
	log.Info("first")
	<-h.held
	const extra = 43
	for i := range logQueueLen + extra {
		log.Info("r", "i", i)
	}
	close(h.open)
	q.close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.msgs); n != 2+logQueueLen {
		t.Fatalf("%d records written, want %d: %q", n, 2+logQueueLen, h.msgs)
	}
	if want := "discovery: fleet: log records dropped: the Logger fell behind 43"; h.msgs[1] != want {
		t.Errorf("after the held record: %q, want %q", h.msgs[1], want)
	}
}
