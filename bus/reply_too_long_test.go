package bus_test

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// longReply is a reply subject under the anonymous inbox longer than the
// server's control line (max_control_line, 4 KiB): a worker publishing
// there would have its own connection closed by the server.
var longReply = wire.Inbox("") + strings.Repeat("a", 5000)

// watchDisconnects counts the times nc loses its connection.
func watchDisconnects(nc *nats.Conn) *atomic.Int64 {
	var n atomic.Int64
	nc.SetDisconnectErrHandler(func(*nats.Conn, error) { n.Add(1) })
	return &n
}

// TestLongReplySubjectRefused: a request passed on as unserved, or a
// durable call, names its caller's reply subject in a header
// (Toolbus-Reply), which a caller sets as it likes, up to the server's
// max_payload. One under _INBOX. past the server's control line made the
// worker publish its final there, and the server closed the worker's
// connection ("maximum control line exceeded"): every call it ran was
// cut off, and a durable one, delivered again, did it again. The worker
// now refuses such a reply subject as one outside the caller's inbox:
// nothing is published, the line is logged, its connection stays up.
func TestLongReplySubjectRefused(t *testing.T) {
	for _, durable := range []bool{false, true} {
		name := "unserved"
		if durable {
			name = "durable"
		}
		t.Run(name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			tk := toolkit.New(nil)
			mustAdd(t, tk, echoTool())
			var log natstest.Buffer
			o := bus.WorkerOptions{Instance: "w", AnnounceInterval: -1, Logger: slog.New(slog.NewTextHandler(&log, nil))}
			var wnc *nats.Conn
			if durable {
				_, wnc = startDurableWorker(t, s, tk, o, 0, false)
			} else {
				wnc = natstest.Connect(t, s)
				serve(t, wnc, tk, &o)
			}
			lost := watchDisconnects(wnc)

			nc := natstest.Connect(t, s)
			data, err := wire.Msgpack.Marshal(&wire.Request{ID: "long", Input: map[string]any{"text": "hi"}})
			if err != nil {
				t.Fatal(err)
			}
			m := &nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: nats.NewInbox(), Data: data,
				Header: nats.Header{wire.HeaderUnserved: {"w0"}, wire.HeaderReply: {longReply}}}
			if durable {
				m = &nats.Msg{Subject: wire.DurableSubject("echo", ""), Data: data, Header: nats.Header{wire.HeaderReply: {longReply}, "Nats-Msg-Id": {"long"}}}
				if _, err := natstest.JS(t, nc).PublishMsg(ctxT(t), m); err != nil {
					t.Fatal(err)
				}
			} else if err := nc.PublishMsg(m); err != nil {
				t.Fatal(err)
			}
			natstest.WaitFor(t, "the call refused, or the worker's connection lost", func() bool {
				return lost.Load() > 0 || strings.Contains(log.String(), "reply subject is outside the caller's inbox")
			})
			// A round trip after whatever the worker published: the
			// server has read it.
			if err := wnc.FlushTimeout(guard); err != nil && lost.Load() == 0 {
				t.Fatal(err)
			}
			if n := lost.Load(); n > 0 {
				t.Fatalf("a request naming a reply subject of %d bytes: the worker lost its connection %d times", len(longReply), n)
			}
			// The worker serves on.
			c := newClient(t, natstest.Connect(t, s), nil)
			if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: durable, Input: map[string]any{"text": "after"}}); r.Text() != "after" {
				t.Fatalf("a call after: %+v", r)
			}
			if n := lost.Load(); n > 0 {
				t.Fatalf("the worker lost its connection %d times", n)
			}
		})
	}
}

// TestLongInboxPrefixRefused: a client whose connection's inbox prefix
// makes its reply subjects longer than workers answer on is refused when
// it is made, not left to see its every call end worker_lost.
func TestLongInboxPrefixRefused(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc, err := s.Connect(nats.CustomInboxPrefix(wire.Inbox("") + strings.Repeat("a", wire.MaxReplyLen)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if c, err := bus.NewClient(nc, nil); err == nil || !strings.Contains(err.Error(), "inbox prefix") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a client of a connection whose inbox prefix is over %d bytes: %v", wire.MaxReplyLen, err)
	}
}

// TestLongInboxPrefixSaysItsLength: the refusal of a connection whose
// inbox prefix is too long named the length of one of its inboxes (the
// prefix, a dot and a unique part) as the prefix's, under the bound on
// reply subjects: a prefix of 1000 bytes was said to be "1023 bytes"
// where workers answer up to 1024, which reads as no reason at all. It
// names the prefix's own length and the most the bound leaves it.
func TestLongInboxPrefixSaysItsLength(t *testing.T) {
	s := natstest.Embedded(t, false)
	prefix := wire.Inbox("") + strings.Repeat("a", 1000-len(wire.Inbox("")))
	nc, err := s.Connect(nats.CustomInboxPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := bus.NewClient(nc, nil)
	if c != nil {
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "is 1000 bytes") || !strings.Contains(err.Error(), "at most 987") {
		t.Fatalf("a client of a connection whose inbox prefix is 1000 bytes: %v; want its length and the most it may be (987 bytes)", err)
	}
	longest, err := s.Connect(nats.CustomInboxPrefix(prefix[:987]))
	if err != nil {
		t.Fatal(err)
	}
	defer longest.Close()
	c, err = bus.NewClient(longest, nil)
	if err != nil {
		t.Fatalf("a client of a connection whose inbox prefix is 987 bytes: %v", err)
	}
	c.Close()
}
