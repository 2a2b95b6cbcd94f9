package discovery

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestSilentInstanceExpiresWhileConnected: an instance that announced and
// then went silent, its connection still up (a worker hung, or one
// announcing once by hand), expires after its TTL like a dead one; a live
// one's connection being up is no reason to keep another's entry.
func TestSilentInstanceExpiresWhileConnected(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoverWindow: 100 * time.Millisecond})
	nc := natstest.Conn(t, s)
	publishAnnouncement(t, nc, announcement("hung", 1, 100, "echo"))
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "hung listed", func() bool { return listed(f, "hung") })
	natstest.WaitFor(t, "hung expired while its connection stays up", func() bool { return !listed(f, "hung") })
	if _, ok := f.Tool("echo"); ok {
		t.Error("the silent instance's tool still listed")
	}
	if !nc.IsConnected() {
		t.Fatal("the silent instance's connection closed: the test proves nothing")
	}
}
