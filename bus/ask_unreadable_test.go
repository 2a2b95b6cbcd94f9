package bus_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestAskUnreadableAnswerReachesTool: a caller speaking the wire directly
// answers a tool's request on the token the ask frame named, but in a body
// the worker cannot read (JSON without Content-Type: application/json is
// read as msgpack; or JSON cut short). The tool hears that the answer was
// unreadable and the call ends. Before, the worker logged the answer and
// dropped it, and the tool waited for another that its caller, having
// answered, would never send: the call ran, heartbeating, until its
// deadline or for ever.
func TestAskUnreadableAnswerReachesTool(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, askTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)

	for i, c := range []struct {
		name   string
		answer *nats.Msg
	}{
		{"JSON without its Content-Type", &nats.Msg{Data: []byte(`{"result":{"action":"accept","content":{"name":"Ada"}}}`)}},
		{"JSON cut short", &nats.Msg{Data: []byte(`{"result":{"action":`), Header: nats.Header{"Content-Type": {"application/json"}}}},
	} {
		answer := c.answer
		t.Run(c.name, func(t *testing.T) {
			frames := make(chan *nats.Msg, 64)
			sub, err := nc.ChanSubscribe("_INBOX.unreadable.*", frames)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			req := &nats.Msg{Subject: "tools.call.greet", Reply: "_INBOX.unreadable.c" + strconv.Itoa(i), Data: []byte(`{"id":"c` + strconv.Itoa(i) + `"}`),
				Header: nats.Header{"Content-Type": {"application/json"}}}
			if err := nc.PublishMsg(req); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			for {
				var m *nats.Msg
				select {
				case m = <-frames:
				case <-ctx.Done():
					t.Fatal("no final: the tool still waits for an answer")
				}
				var f struct {
					Kind string `json:"kind"`
					Ask  *struct {
						Reply string `json:"reply"`
					} `json:"ask"`
					Final *toolkit.Response `json:"final"`
				}
				if err := json.Unmarshal(m.Data, &f); err != nil {
					t.Fatalf("frame %q: %v", m.Data, err)
				}
				switch f.Kind {
				case "ask":
					answer.Subject = f.Ask.Reply
					if err := nc.PublishMsg(answer); err != nil {
						t.Fatal(err)
					}
				case "final":
					if txt := f.Final.Text(); !strings.Contains(txt, "no answer: ") || !strings.Contains(txt, "could not be read") {
						t.Fatalf("final %+v", f.Final)
					}
					return
				}
			}
		})
	}
}
