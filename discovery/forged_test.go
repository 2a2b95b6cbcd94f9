package discovery

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// rolesServer starts a server with the roles of toolctl auth init (a
// caller alice) and returns a function connecting with a role's key.
func rolesServer(t *testing.T) (*server.Server, func(seed string) *nats.Conn) {
	t.Helper()
	dir := t.TempDir()
	setup, err := auth.Init(dir, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	fo, err := server.ProcessConfigFile(setup.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	s := natstest.ServerWith(t, func(o *server.Options) { o.Nkeys, o.Users, o.Accounts = fo.Nkeys, fo.Users, fo.Accounts })
	return s, func(seed string) *nats.Conn {
		t.Helper()
		opt, err := nats.NkeyOptionFromSeed(filepath.Join(dir, seed))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect("", nats.InProcessServer(s), opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
}

// TestCallerCannotCrowdOutAnnouncements: a caller may not publish on
// tools.announce.>, but it may send JetStream API requests, and the
// server publishes their answers wherever the reply subject says: on a
// live worker's announcement subject. A fleet keeps only the last two
// messages of a subject for its intake, so two such answers pushed out
// the worker's real announcement (a caller repeating them could make the
// worker expire from every fleet, and each answer was logged as a
// malformed announcement by every fleet). A message that cannot be an
// announcement (a server's answer: JSON without the JSON header, server
// headers, a map that is not an announcement's) takes no place.
func TestCallerCannotCrowdOutAnnouncements(t *testing.T) {
	_, conn := rolesServer(t)
	h, release := gate(t, wire.AnnounceSubject("blocker"))
	f := startFleet(t, conn("gateway.nk"), &FleetOptions{Logger: slog.New(h), applying: h.stall})
	worker, alice := conn("worker.nk"), conn("caller-alice.nk")

	// The intake is held on a malformed announcement (format 0).
	h.hold(t, worker, unreadable)

	publishAnnouncement(t, worker, announcement("w1", 1, 3_600_000, "echo"))
	worker.Flush()
	waitHeld(t, f, wire.AnnounceSubject("w1"))
	const junk = 3
	for range junk {
		if err := alice.PublishRequest("$JS.API.INFO", wire.AnnounceSubject("w1"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.Flush(); err != nil {
		t.Fatal(err)
	}
	// Delivered counts a message as it is handed over: the callbacks of
	// all the others have returned.
	natstest.WaitFor(t, "the server's answers received", func() bool {
		n, _ := f.sub.Delivered()
		return n >= 2+junk
	})

	release()
	natstest.WaitFor(t, "w1's announcement or the answers read", func() bool {
		_, ok := f.Tool("echo")
		return ok || h.said(wire.AnnounceSubject("w1"), "malformed")
	})
	if !listed(f, "w1") {
		t.Fatal("the server's answers to a caller's requests pushed the live worker's announcement out of the fleet's intake")
	}
}

// TestMayAnnounce: what the fleet's intake refuses before it holds it.
func TestMayAnnounce(t *testing.T) {
	ann := wire.Announcement{Format: 1, Instance: "w1", EpochMS: 1, Seq: 1, Tools: []wire.AnnouncedTool{}}
	asJSON, err := wire.JSON.Marshal(&ann)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: "c1", Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	jsonHdr := wire.JSON.Header()
	for _, tt := range []struct {
		name string
		m    nats.Msg
		want bool
	}{
		{"msgpack announcement", nats.Msg{Data: mustMsgpack(t, ann)}, true},
		{"JSON announcement", nats.Msg{Header: jsonHdr, Data: asJSON}, true},
		{"JSON announcement, spaces first", nats.Msg{Header: jsonHdr, Data: append([]byte(" \n"), asJSON...)}, true},
		{"msgpack map, another encoder's key order", nats.Msg{Data: []byte("\x82\xa8instance\xa2w1\xa1v\x01")}, true},
		{"a JetStream API answer", nats.Msg{Data: []byte(`{"type":"io.nats.jetstream.api.v1.account_info_response"}`)}, false},
		{"a kept frame", nats.Msg{Data: frame}, false},
		{"a direct get's stored message", nats.Msg{Header: nats.Header{"Nats-Stream": {"KV_x"}, "Content-Type": {wire.ContentTypeJSON}}, Data: asJSON}, false},
		{"a status", nats.Msg{Header: nats.Header{"Status": {"404"}}, Data: mustMsgpack(t, ann)}, false},
		{"JSON header, not an object", nats.Msg{Header: jsonHdr, Data: []byte(`[1]`)}, false},
		{"empty", nats.Msg{}, false},
		{"truncated map", nats.Msg{Data: []byte("\x81\xa8inst")}, false},
	} {
		if got := mayAnnounce(&tt.m); got != tt.want {
			t.Errorf("%s: mayAnnounce = %v, want %v", tt.name, got, tt.want)
		}
	}
}
