package discovery

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestStuckAnnouncerCallbackFreezesNothing: an Announcer called its
// user's code (its Meta functions, its Logger) under the lock all its
// messages go out under, and its Logger on the goroutine answering
// discover requests. One that never returned stopped the worker
// announcing (fleets expired the live worker at its TTL, and its tools
// vanished from every client's view) or answering discover requests. The
// worker goes on announcing and answering: a stuck Meta function's last
// value goes out meanwhile, and the other parts stay fresh.
func TestStuckAnnouncerCallbackFreezesNothing(t *testing.T) {
	for _, stuck := range []string{"meta", "logger-meta", "logger-answer"} {
		t.Run(stuck, func(t *testing.T) {
			s := natstest.Server(t)
			// Released when the test ends, before the cleanups (among them
			// the announcer's Stop, which waits for the call in progress).
			var logs natstest.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			h := &stuckHandler{stuck: make(chan struct{}), open: t.Context().Done()}
			switch stuck {
			case "logger-meta":
				h.word = "cannot be encoded"
				logger = slog.New(h)
			case "logger-answer":
				h.word = "without a reply subject"
				logger = slog.New(h)
			}
			var block, unencodable atomic.Bool
			var count atomic.Int64
			held := make(chan struct{})
			var once sync.Once
			meta := map[string]func() any{
				"stuck": func() any {
					if block.Load() {
						once.Do(func() { close(held) })
						<-t.Context().Done()
					}
					return "last"
				},
				"count": func() any { return count.Add(1) },
				"bad": func() any {
					if unencodable.Load() {
						return func() {}
					}
					return nil
				},
			}
			nc := natstest.Conn(t, s)
			startAnnouncer(t, nc, fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: 50 * time.Millisecond, Logger: logger, Meta: meta})
			f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoverWindow: 100 * time.Millisecond})
			natstest.WaitFor(t, "w1 listed", func() bool { return listed(f, "w1") })

			var wait <-chan struct{}
			switch stuck {
			case "meta":
				block.Store(true)
				wait = held
			case "logger-meta":
				unencodable.Store(true)
				wait = h.stuck
			case "logger-answer":
				if err := natstest.Conn(t, s).Publish(wire.SubjectDiscover, nil); err != nil {
					t.Fatal(err)
				}
				wait = h.stuck
			}
			select {
			case <-wait:
			case <-time.After(natstest.Guard):
				t.Fatal("the callback was never called")
			}
			stuckAt := time.Now()
			counted := count.Load()

			natstest.WaitFor(t, "w1 announced again since its callback got stuck", func() bool {
				for _, in := range f.Instances() {
					if in.ID == "w1" && in.LastSeen.After(stuckAt) {
						var n int64
						ok, _ := in.DecodeMeta("count", &n)
						return ok && n > counted
					}
				}
				return false
			})
			m, err := natstest.Conn(t, s).Request(wire.SubjectDiscover, nil, natstest.Guard)
			if err != nil {
				t.Fatalf("discover request with a callback stuck: %v", err)
			}
			var ann wire.Announcement
			if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &ann); err != nil {
				t.Fatal(err)
			}
			if ann.Instance != "w1" || ann.Meta["stuck"] != "last" || ann.Meta["count"] == nil {
				t.Errorf("the answer to discover: instance %q, meta %v; want w1 with the stuck part's last value and count", ann.Instance, ann.Meta)
			}
			if stuck == "meta" {
				// Past another two announcements: logged once.
				n := count.Load()
				natstest.WaitFor(t, "two more announcements", func() bool { return count.Load() >= n+2 })
				if c := strings.Count(logs.String(), "has not returned"); c != 1 {
					t.Errorf("the stuck Meta function logged %d times, want once:\n%s", c, logs.String())
				}
			}
		})
	}
}
