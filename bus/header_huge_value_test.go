package bus_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestHugeHeaderValueAnswered: a request whose Toolbus-Version,
// Toolbus-Heartbeat, Toolbus-Timeout or Toolbus-Groups-Revision header
// is not what the contract allows is answered invalid_input, quoting the
// value. A value as long as the server's max_payload allows made that
// final longer than max_payload: the worker could not publish it (only
// its log said so), and its caller heard nothing until its stall
// timeout, worker_lost, as if the worker had died. The value is now
// quoted cut short, and the final reaches the caller.
func TestHugeHeaderValueAnswered(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "huge", Input: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	// As long as the request may be: the header's name and framing take
	// less than 64 bytes.
	value := strings.Repeat("x", int(nc.MaxPayload())-len(data)-64)
	for _, header := range []string{wire.HeaderVersion, wire.HeaderHeartbeat, wire.HeaderTimeout, wire.HeaderGroupsRevision} {
		t.Run(header, func(t *testing.T) {
			inbox := nats.NewInbox()
			sub, err := nc.SubscribeSync(inbox)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: inbox, Header: nats.Header{header: {value}}, Data: data}); err != nil {
				t.Fatal(err)
			}
			m, err := sub.NextMsg(guard)
			if err != nil {
				t.Fatalf("a request whose %s header holds %d bytes: no answer: %v", header, len(value), err)
			}
			var f wire.Frame
			if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Kind != wire.KindFinal || f.Final.Code != toolkit.CodeInvalidInput || !strings.Contains(f.Final.Text(), header) || len(m.Data) > 4096 {
				t.Fatalf("a request whose %s header holds %d bytes: a %s frame of %d bytes, %s %.300q", header, len(value), f.Kind, len(m.Data), f.Final.Code, f.Final.Text())
			}
		})
	}
}

// TestHugeRequestFieldAnswered: a request whose call id is invalid, or
// whose "name" is not the tool it was sent to, is answered invalid_input.
// One as long as max_payload allows made that final, which carried the
// id whole (twice: the frame's and the final's) or quoted the name
// whole, longer than max_payload: the worker could not publish it, and
// its caller heard nothing until its stall timeout. The answer now
// arrives, the id cut to its first 128 bytes and the name quoted cut.
func TestHugeRequestFieldAnswered(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	// As long as the request may be: the rest of the body takes less than
	// 64 bytes.
	long := strings.Repeat("x", int(nc.MaxPayload())-64)
	for name, req := range map[string]*wire.Request{
		"id":   {ID: long + "!"},
		"name": {ID: "named", Name: long},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := wire.Msgpack.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			inbox := nats.NewInbox()
			sub, err := nc.SubscribeSync(inbox)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: inbox, Data: data}); err != nil {
				t.Fatal(err)
			}
			m, err := sub.NextMsg(guard)
			if err != nil {
				t.Fatalf("a request whose %s holds %d bytes: no answer: %v", name, len(long), err)
			}
			var f wire.Frame
			if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Kind != wire.KindFinal || f.Final.Code != toolkit.CodeInvalidInput || len(m.Data) > 4096 {
				t.Fatalf("a request whose %s holds %d bytes: a %s frame of %d bytes, %s %.300q", name, len(long), f.Kind, len(m.Data), f.Final.Code, f.Final.Text())
			}
			if name == "id" && (f.ID != long[:wire.MaxCallIDLen] || f.Final.ID != f.ID) {
				t.Errorf("the answer to a call id of %d bytes names the call %.200q (final %.200q), want its first %d bytes", len(req.ID), f.ID, f.Final.ID, wire.MaxCallIDLen)
			}
		})
	}
}
