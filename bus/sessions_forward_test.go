package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
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

// TestSessionPassedOnIsNotHeld: a session uses session-bound tools that
// no one worker serves all of ("put"/"get" on a and b, "browse" on m only,
// as an MCP server mounted on one worker). A call of a tool its pinned
// worker does not serve is passed on with Toolbus-Pin-Lost, and the
// worker that gets it takes the session over at once, without a probe;
// the worker that passed it on must not go on serving the session from
// its memory of holding the pin (trust), or the session's put and get run
// on a and b in turn, each with its own state, and no final says so.
func TestSessionPassedOnIsNotHeld(t *testing.T) {
	s := natstest.Embedded(t, false)
	for _, name := range []string{"a", "b"} {
		rvWorker(t, natstest.Connect(t, s), name, &bus.SessionsOptions{})
	}
	tkM := toolkit.New(nil)
	mustAdd(t, tkM, toolkit.Raw("browse", "Browse.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("browsed"))
	}), toolkit.SessionBound())
	ncM := natstest.Connect(t, s)
	serve(t, ncM, tkM, &bus.WorkerOptions{Instance: "m", Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, ncM)}})
	c := newClient(t, natstest.Connect(t, s), nil)
	for i := range 10 {
		v := fmt.Sprint(i)
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: "s", Input: map[string]any{"value": v}}); r.Text() != "kept" && r.Metadata[wire.MetaSessionMovedFrom] == nil {
			t.Fatalf("put: %+v", r)
		}
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "browse", Session: "s"}); r.State != toolkit.StateSuccess {
			t.Fatalf("browse: %+v", r)
		}
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "get", Session: "s"})
		if r.Text() != v && r.Metadata[wire.MetaSessionMovedFrom] == nil {
			t.Errorf("round %d: get after put %q ran on %v and read %s %q, and its final does not say the session moved (metadata %v)",
				i, v, r.Metadata[wire.MetaWorker], r.Code, r.Text(), r.Metadata)
		}
	}
}
