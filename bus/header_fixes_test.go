package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// rawFrames publishes a hand-made request and collects its frames up to
// and including the final (or until guard).
func rawFrames(t *testing.T, nc *nats.Conn, subject string, hdr nats.Header, req wire.Request) []*wire.Frame {
	t.Helper()
	body, err := msgpack.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: inbox, Header: hdr, Data: body}); err != nil {
		t.Fatal(err)
	}
	var frames []*wire.Frame
	deadline := time.Now().Add(guard)
	for {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("after %d frames: %v", len(frames), err)
		}
		f, err := decodeFrame(m)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		if f.Kind == wire.KindFinal {
			return frames
		}
	}
}

// The contract clamps a heartbeat of "0 or less" to 20 ms. A hugely
// negative value overflowed the multiplication by time.Millisecond into a
// huge positive interval, so a silent call sent no heartbeat at all (and
// its caller ended it worker_lost).
func TestHeartbeatHugelyNegative(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("quiet", "Silent for a while.", func(ctx context.Context, in struct{}) (string, error) {
		time.Sleep(time.Second) // 50 intervals of 20 ms
		return "awake", nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	for _, v := range []string{"-5", "-9223372036855"} {
		t.Run(v, func(t *testing.T) {
			frames := rawFrames(t, nc, "tools.call.quiet", nats.Header{wire.HeaderHeartbeat: {v}}, wire.Request{ID: "hb", Input: map[string]any{}})
			hbs := 0
			for _, f := range frames {
				if f.Kind == wire.KindHeartbeat {
					hbs++
				}
			}
			if hbs == 0 {
				t.Fatalf("heartbeat %s ms: %d frames, no heartbeat during a 1 s silent call; want the 20 ms minimum", v, len(frames))
			}
		})
	}
}

// A caller's ctx whose deadline is far away (a "never" sentinel such as
// year 2300) was sent as a Toolbus-Timeout the worker refused as not "a
// number of milliseconds": the call ended invalid_input instead of running.
func TestFarDeadline(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	ctx, cancel := context.WithDeadline(context.Background(), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel()
	r := c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}})
	if r.State != toolkit.StateSuccess || r.Text() != "hi" {
		t.Fatalf("call with a deadline in 2300: %s %s %q, want success", r.State, r.Code, r.Text())
	}
}

// subjects.md clamps a Toolbus-Timeout past about 146 years and a
// Toolbus-Heartbeat to [20 ms, 60 s], and refuses only a value that is
// not a decimal integer. An integer past int64 (a caller in another
// language sending its uint64 maximum as "never") was refused
// invalid_input instead of clamped.
func TestHeaderIntegersPastInt64Clamped(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	huge := "18446744073709551615"
	cases := []struct {
		name   string
		header string
		value  string
		code   toolkit.Code
	}{
		{"timeout never", wire.HeaderTimeout, huge, ""},
		{"timeout hugely negative", wire.HeaderTimeout, "-" + huge, toolkit.CodeTimeout},
		{"heartbeat", wire.HeaderHeartbeat, huge, ""},
		{"heartbeat hugely negative", wire.HeaderHeartbeat, "-" + huge, ""},
		{"timeout not an integer", wire.HeaderTimeout, "1500.0", toolkit.CodeInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frames := rawFrames(t, nc, "tools.call.echo", nats.Header{tc.header: {tc.value}}, wire.Request{ID: "h", Name: "echo", Input: map[string]any{"text": "hi"}})
			if f := frames[len(frames)-1].Final; f.Code != tc.code {
				t.Fatalf("%s %s: final %s %q, want code %q", tc.header, tc.value, f.Code, f.Text(), tc.code)
			}
		})
	}
}
