package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// unreadable is a message no fleet can read as an announcement (format
// 0): the fleet logs it as malformed.
var unreadable = []byte{0x81, 0xa1, 'v', 0x00}

// gateHandler is a logger that records every record's message and
// instance; its stall, set as a fleet's holding or applying hook, holds
// the goroutine taking a message on subject gated (the subscription's, or
// the intake) until open is closed.
type gateHandler struct {
	gated   string
	blocked chan struct{} // closed when a message on gated is being held
	open    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	records []string // "instance: message" and "subject: message"
}

func (h *gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *gateHandler) WithGroup(string) slog.Handler            { return h }
func (h *gateHandler) Handle(_ context.Context, r slog.Record) error {
	var subject, inst string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "subject":
			subject = a.Value.String()
		case "instance":
			inst = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, inst+": "+r.Message, subject+": "+r.Message)
	h.mu.Unlock()
	return nil
}

// stall holds the goroutine taking m, a message on the gated subject,
// until the gate opens.
func (h *gateHandler) stall(m *nats.Msg) {
	if m.Subject == h.gated {
		h.once.Do(func() { close(h.blocked) })
		<-h.open
	}
}

func (h *gateHandler) said(inst, word string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if strings.HasPrefix(r, inst+": ") && strings.Contains(r, word) {
			return true
		}
	}
	return false
}

// gate returns a gateHandler whose stall holds the goroutine taking a
// message on subject, and the release that lets it go on (once; calling it again
// does nothing). The release also runs when the test ends, as its
// t.Context is cancelled, before its cleanups: among them the Close of a
// fleet started after the gate, which waits for the intake the gate
// holds (a release registered with t.Cleanup would run after that Close,
// and a test failing before its release would hang there).
func gate(t *testing.T, subject string) (*gateHandler, func()) {
	t.Helper()
	h := &gateHandler{gated: subject, blocked: make(chan struct{}), open: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(h.open) }) }
	context.AfterFunc(t.Context(), release)
	return h, release
}

// hold publishes data on the gated subject from nc and returns once the
// goroutine taking it is held.
func (h *gateHandler) hold(t *testing.T, nc *nats.Conn, data []byte) {
	t.Helper()
	if err := nc.Publish(h.gated, data); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.blocked:
	case <-time.After(natstest.Guard):
		t.Fatalf("timed out waiting for the message on %s to be held", h.gated)
	}
}

// waitHeld waits until a message of each of subjects waits for f's
// intake.
func waitHeld(t *testing.T, f *Fleet, subjects ...string) {
	t.Helper()
	natstest.WaitFor(t, fmt.Sprintf("messages of %v held for the intake", subjects), func() bool {
		f.inMu.Lock()
		defer f.inMu.Unlock()
		for _, s := range subjects {
			if len(f.latest[s]) == 0 {
				return false
			}
		}
		return true
	})
}

// announcement is instance id's announcement number seq (epoch 1) of one
// basic tool named tool, taking no input, with interval_ms interval.
func announcement(id string, seq uint64, interval int64, tool string) wire.Announcement {
	return wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: seq, IntervalMS: interval,
		Tools: []wire.AnnouncedTool{{Name: tool, Description: "x", Group: "basic", Idempotency: "unknown",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}}
}

// applyNow applies ann, arrived at at, as the intake does: the view
// is merged again at once.
func applyNow(t *testing.T, f *Fleet, ann wire.Announcement, at time.Time) {
	t.Helper()
	if f.apply(announcementMsg(t, ann), at) {
		f.remerge()
	}
}
