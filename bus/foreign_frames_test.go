package bus_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A frame on a call's reply subject was taken as the call's whatever its
// id: a worker answering one call could end the client's other calls,
// served by other workers, with a final of its own, published to their
// reply subjects (the client's inbox with a token counted from 1). A
// frame of another id is dropped: the call ends with its own final.
func TestFramesOfAnotherCallDropped(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	publish := func(subject string, f *wire.Frame) {
		data, err := wire.Msgpack.Marshal(f)
		if err != nil {
			t.Error(err)
			return
		}
		wnc.Publish(subject, data)
	}
	type req struct{ id, reply string }
	honest := make(chan req, 1)
	if _, err := wnc.Subscribe(wire.CallSubject("honest", ""), func(m *nats.Msg) {
		var r wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &r); err != nil {
			t.Error(err)
			return
		}
		honest <- req{r.ID, m.Reply} // answered once the other call is over
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := wnc.Subscribe(wire.CallSubject("evil", ""), func(m *nats.Msg) {
		var r wire.Request
		if err := wire.Msgpack.Unmarshal(m.Data, &r); err != nil {
			t.Error(err)
			return
		}
		cut := strings.LastIndexByte(m.Reply, '.')
		own, err := strconv.Atoi(m.Reply[cut+1:])
		if err != nil {
			t.Errorf("reply subject %s", m.Reply)
			return
		}
		for n := 1; n < own; n++ {
			publish(m.Reply[:cut+1]+strconv.Itoa(n), &wire.Frame{Kind: wire.KindFinal, ID: "forged", Seq: 1, Final: toolkit.Final("forged", "", "FORGED")})
		}
		publish(m.Reply, &wire.Frame{Kind: wire.KindFinal, ID: r.ID, Seq: 1, Final: toolkit.Final(r.ID, "", "evil")})
	}); err != nil {
		t.Fatal(err)
	}
	wnc.Flush()
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxAttempts: 1})
	ctx := ctxT(t)
	first := make(chan *toolkit.Response, 1)
	go func() { first <- c.Invoke(ctx, toolkit.ToolCall{Name: "honest"}) }()
	var r req
	select {
	case r = <-honest:
	case <-ctx.Done():
		t.Fatal("the honest worker got no call")
	}
	if got := c.Invoke(ctx, toolkit.ToolCall{Name: "evil"}); got.Text() != "evil" {
		t.Fatalf("the evil call: %s %s %q", got.State, got.Code, got.Text())
	}
	publish(r.reply, &wire.Frame{Kind: wire.KindFinal, ID: r.id, Seq: 1, Final: toolkit.Final(r.id, "", "honest")})
	select {
	case got := <-first:
		if got.State != toolkit.StateSuccess || got.Text() != "honest" {
			t.Errorf("the honest call ended %s %s: %q", got.State, got.Code, got.Text())
		}
	case <-ctx.Done():
		t.Fatal("the honest call did not end")
	}
}
