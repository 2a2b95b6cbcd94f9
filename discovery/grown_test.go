package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestAnnouncerGrownPastMaxPayload: a worker whose toolkit grows past
// what one message may hold (an MCP server mounted later lists many
// tools) could no longer announce at all: every fleet expired it at its
// TTL while it went on serving its tools. It keeps announcing the last
// announcement that fit, and logs why the new one is not.
func TestAnnouncerGrownPastMaxPayload(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.MaxPayload = 4096 })
	var logs natstest.Buffer
	tk := fleetToolkit(t)
	startAnnouncer(t, natstest.Conn(t, s), tk, &AnnouncerOptions{Instance: "w1", Interval: time.Second, // TTL 3 s: a loaded machine keeps it
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(&natstest.Buffer{}, nil))})
	natstest.WaitFor(t, "w1 listed", func() bool { return listed(f, "w1") })

	for i := range 50 {
		err := tk.Add(toolkit.Raw(fmt.Sprint("tool", i), strings.Repeat("A long description. ", 5), nil,
			func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
	}
	// Two announcements over the limit: whatever arrives after the
	// second was sent after the toolkit grew.
	natstest.WaitFor(t, "the announcements over max_payload logged", func() bool { return strings.Count(logs.String(), "max_payload") >= 2 })
	failed := time.Now()
	natstest.WaitFor(t, "w1 gone or heard from again", func() bool {
		for _, in := range f.Instances() {
			if in.ID == "w1" {
				return in.LastSeen.After(failed)
			}
		}
		return true
	})
	if !listed(f, "w1") {
		t.Fatalf("the live worker expired once its announcement outgrew max_payload; its log:\n%s", logs.String())
	}
	if _, ok := f.Tool("echo"); !ok {
		t.Error("w1's tools of its last announcement that fit are not listed")
	}
	if !strings.Contains(logs.String(), "the last announcement that fit") {
		t.Errorf("the log does not say the last announcement that fit goes out instead:\n%s", logs.String())
	}
}
