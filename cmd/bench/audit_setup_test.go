package main

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/toolkit"
)

// handReplies is an auditor on a server of its own and a connection that
// publishes reply frames to it by hand, as workers answer calls.
type handReplies struct {
	t      *testing.T
	a      *auditor   // hears every reply under prefix
	pub    *nats.Conn // not the auditor's
	prefix string
}

func startHandReplies(t *testing.T) *handReplies {
	t.Helper()
	s, err := embedded.Start(&embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	connect := func() *nats.Conn {
		nc, err := s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	h := &handReplies{t: t, prefix: newInboxPrefix()}
	h.a, err = newAuditor(connect(), h.prefix)
	if err != nil {
		t.Fatal(err)
	}
	h.pub = connect()
	return h
}

// send publishes frame seq of call id's reply: a final of success or a
// chunk of text; any other kind bare.
func (h *handReplies) send(id string, seq uint64, kind wire.Kind) {
	h.t.Helper()
	f := &wire.Frame{Kind: kind, ID: id, Seq: seq}
	switch kind {
	case wire.KindFinal:
		f.Final = &toolkit.Response{ID: id, State: toolkit.StateSuccess}
	case wire.KindChunk:
		f.Chunk = &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}}
	}
	data, err := wire.Msgpack.Marshal(f)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.pub.Publish(h.prefix+".abc."+id, data); err != nil {
		h.t.Fatal(err)
	}
}

// auditedEnv is an env on a server of its own, with no worker: its
// client (stall timeout 1 s) calls on the caller connection, whose
// replies its auditor hears on a connection of its own.
func auditedEnv(t *testing.T, cfg *config) *env {
	t.Helper()
	s, err := embedded.Start(&embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	prefix := newInboxPrefix()
	caller, err := s.Connect(nats.CustomInboxPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(caller.Close)
	ac, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ac.Close)
	a, err := newAuditor(ac, prefix)
	if err != nil {
		t.Fatal(err)
	}
	client, err := bus.NewClient(caller, &bus.ClientOptions{StallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return &env{cfg: cfg, caller: caller, client: client, fleet: &localFleet{}, audit: a}
}
