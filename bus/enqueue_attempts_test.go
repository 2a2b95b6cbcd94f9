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

// TestEnqueueAttempts: how a durable call's queueing ends after attempts
// the stream answered in turn (a real server and calls stream; the
// attempts' answers scripted).
//
//   - A plain error, then a duplicate acknowledgement: the errored attempt
//     stored nothing, so the duplicate is another sender's call of the
//     same id, answered DuplicateCallError, not waited for (its final goes
//     to the other sender).
//   - An unanswered attempt, then another error; or then no stream leader
//     until the client gives up (QueueWait): the call may have been stored
//     and may still commit and run, so the client says so and sends its
//     cancel, and workers that see the cancel first answer it interrupted
//     instead of running a call its caller was told failed.
func TestEnqueueAttempts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []error // the attempts' errors in turn, the last repeated; nil: a duplicate acknowledgement
		want    string
		cancel  bool
	}{
		{"error then duplicate", []error{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, nil}, "DuplicateCallError", false},
		{"unanswered then error", []error{jetstream.ErrAsyncPublishTimeout, &jetstream.APIError{Code: 400, ErrorCode: 10999, Description: "something else"}}, "may have been stored", true},
		{"unanswered then no leader", []error{jetstream.ErrAsyncPublishTimeout, jetstream.ErrNoStreamResponse}, "may have been stored", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := natstest.Embedded(t, true)
			nc := natstest.Connect(t, s)
			if _, err := natstest.JS(t, nc).CreateStream(natstest.Ctx(t), CallsStreamConfig(2*time.Minute, 1)); err != nil {
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
			c.consumers.tools.Store("echo", struct{}{}) // served: its consumer seen
			n := 0
			c.publish = func(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
				err := tc.answers[min(n, len(tc.answers)-1)]
				n++
				if err == nil {
					return &jetstream.PubAck{Stream: wire.StreamCalls, Sequence: 7, Duplicate: true}, nil
				}
				return nil, err
			}
			final := c.enqueue(natstest.Ctx(t), toolkit.ToolCall{ID: "c1", Name: "echo", Durable: true}, "_INBOX.x.1", nil, []byte{0x80}, new(uint64), new(uint64))
			if final == nil || !strings.Contains(final.Text(), tc.want) {
				t.Fatalf("after %d attempts: %+v; want %q", n, final, tc.want)
			}
			// A cancel to send is waited for; none is looked for a second.
			wait := time.Second
			if tc.cancel {
				wait = natstest.Guard
			}
			_, err = cancels.NextMsg(wait)
			if sent := err == nil; sent != tc.cancel {
				t.Fatalf("a cancel sent: %v, want %v", sent, tc.cancel)
			}
		})
	}
}
