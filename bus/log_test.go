package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestToolLogsOverTheBus: a tool's log messages reach the caller as log
// frames, in order with its output, also from a call fast enough to send
// its result in one final.
func TestToolLogsOverTheBus(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("chatty", "Logs, then answers.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		if err := toolkit.Log(w, toolkit.LogMessage{Level: "notice", Logger: "chatty", Data: map[string]any{"step": 1}}); err != nil {
			return err
		}
		// Straight to the writer, past toolkit.Log's check: still refused.
		if lw, ok := w.(toolkit.LogWriter); !ok || lw.Log(toolkit.LogMessage{Level: "loud"}) == nil {
			return errors.New("a log with an unknown level was taken")
		}
		return w.Write(toolkit.Text("answer"))
	}))
	w := serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	var logs []toolkit.LogMessage
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "chatty"}) {
		if ev.Log != nil {
			if final != nil {
				t.Fatal("a log after the final")
			}
			logs = append(logs, *ev.Log)
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final == nil || final.Text() != "answer" {
		t.Fatalf("final: %+v", final)
	}
	if len(logs) != 1 || logs[0].Level != "notice" || logs[0].Logger != "chatty" || logs[0].Data.(map[string]any)["step"] != int64(1) {
		t.Fatalf("logs: %#v", logs)
	}
	if n := w.Counters().Frames[wire.KindLog]; n != 1 {
		t.Fatalf("%d log frames counted", n)
	}

	// JSON, as a caller in another language reads it.
	nc := natstest.Connect(t, s)
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: "tools.call.chatty", Reply: inbox, Header: nats.Header{"Content-Type": {"application/json"}},
		Data: []byte(`{"id":"j1","input":{}}`)}); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(guard)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"log","id":"j1","seq":1,"log":{"level":"notice","logger":"chatty","data":{"step":1}}}`
	if string(m.Data) != want {
		t.Fatalf("first JSON frame\n%s\nwant\n%s", m.Data, want)
	}
}
