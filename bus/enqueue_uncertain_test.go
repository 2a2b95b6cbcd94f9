package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestEnqueueUncertainThenNoLeader: the first attempt goes unanswered
// (the stream leader took the message, then died), the following ones find
// no stream leader (no responders) until the client gives up. The stored
// call may still commit and run once a leader is back: the client says it
// may have been stored, and sends its cancel.
func TestEnqueueUncertainThenNoLeader(t *testing.T) {
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	if _, err := js.CreateStream(natstest.Ctx(t), CallsStreamConfig(2*time.Minute, 1)); err != nil {
		t.Fatal(err)
	}
	cancels, err := nc.SubscribeSync(wire.CancelSubject("", "c1"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(nc, &ClientOptions{QueueWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.jetStream(); err != nil {
		t.Fatal(err)
	}
	n := 0
	c.publish = func(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
		if n++; n == 1 {
			return nil, jetstream.ErrAsyncPublishTimeout
		}
		return nil, jetstream.ErrNoStreamResponse
	}
	final := c.enqueue(natstest.Ctx(t), toolkit.ToolCall{ID: "c1", Name: "echo", Durable: true}, "_INBOX.x.1", nil, []byte{0x80})
	if final == nil || !strings.Contains(final.Text(), "may have been stored") {
		t.Errorf("after an unanswered attempt, then no stream leader: %+v; want 'may have been stored' and a cancel", final)
	}
	if _, err := cancels.NextMsg(2 * time.Second); err != nil {
		t.Errorf("no cancel for a call that may have been stored: %v", err)
	}
}
