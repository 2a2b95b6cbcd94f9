package bus_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestSessionForwardTooLarge: a call that fits max_payload as its caller
// sent it may not fit with the header a pass-on to its session's worker
// adds (Toolbus-Forwarded): it is then answered at once, not silenced and
// left to the caller's stall timeout (worker_lost) for a call that ran
// nowhere.
func TestSessionForwardTooLarge(t *testing.T) {
	s := natstest.Embedded(t, false)
	rvWorker(t, natstest.Connect(t, s), "w1", &bus.SessionsOptions{})
	rvWorker(t, natstest.Connect(t, s), "w2", &bus.SessionsOptions{})
	nc := natstest.Connect(t, s)
	if f := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w1", "put", ""), nil, "s", "v", 10*time.Second)); f.meta(wire.MetaSessionWorker) != "w1" {
		t.Fatalf("claim: %+v", f.Final)
	}

	// A request of max_payload less 4 bytes, headers included, reaching
	// w2 (as from the queue group): w2 passes it on to w1.
	const hdrBytes = len("NATS/1.0\r\n") + len("Content-Type: application/json\r\n") + len("\r\n")
	body := func(value string) []byte {
		b, _ := json.Marshal(map[string]any{"id": "big", "session": "s", "input": map[string]any{"value": value}})
		return b
	}
	value := strings.Repeat("x", int(nc.MaxPayload())-hdrBytes-4-len(body("")))
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: wire.PinnedSubject("w2", "put", ""), Reply: inbox,
		Header: nats.Header{"Content-Type": {"application/json"}}, Data: body(value)}
	if err := nc.PublishMsg(m); err != nil {
		t.Fatalf("the request itself does not fit: %v", err)
	}
	var f rvFrame
	for f.Kind != "final" {
		r, err := sub.NextMsg(15 * time.Second)
		if err != nil {
			t.Fatalf("no final for a call too large to pass on to its session's worker: %v", err)
		}
		if err := json.Unmarshal(r.Data, &f); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("final: %s %q", f.Final.Code, f.text())
	if f.Final.Code != "invalid_input" {
		t.Errorf("final: %s %q; want invalid_input", f.Final.Code, f.text())
	}
}
