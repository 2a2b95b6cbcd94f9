package kv

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
)

// answerLost is a JetStream whose publishes are stored by the server but
// whose answers are lost as the caller's context ends: end is called
// after the message was stored, and the publish fails with ctx's error,
// as one whose answer a stream leader's stepdown dropped while the
// caller's deadline (a call's, a permission check's bound) passed.
type answerLost struct {
	jetstream.JetStream
	end func()
}

func (a answerLost) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if _, err := a.JetStream.PublishMsg(context.WithoutCancel(ctx), m, opts...); err != nil {
		return nil, err
	}
	a.end()
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestWriteLandedAsContextEnded: a write stored by the server whose
// answer was lost as its context ended is answered with its revision,
// not its context's error: the caller would take a write that happened
// for one that did not (an approval's use: the approval spent, the call
// not run, and sent again it asks for approval again). It was told from
// a write that did not land only while the context lasted.
func TestWriteLandedAsContextEnded(t *testing.T) {
	nc := natstest.Conn(t, natstest.Server(t))
	js := natstest.JS(t, nc)
	b, err := js.CreateKeyValue(natstest.Ctx(t), jetstream.KeyValueConfig{Bucket: "ended"})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name  string
		write func(ctx context.Context, js jetstream.JetStream) error
	}{
		{"Write", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := Write(ctx, js, "ended", "k", nil, []byte("v"))
			return err
		}},
		{"Delete", func(ctx context.Context, js jetstream.JetStream) error {
			e, err := b.Get(natstest.Ctx(t), "k")
			if err != nil {
				return err
			}
			return Delete(ctx, js, "ended", "k", e.Revision())
		}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		err := op.write(ctx, answerLost{JetStream: js, end: cancel})
		cancel()
		if err != nil {
			t.Errorf("%s: stored, yet answered %v", op.name, err)
		}
	}
	if _, err := b.Get(natstest.Ctx(t), "k"); err != jetstream.ErrKeyNotFound {
		t.Errorf("the key after its deletion: %v", err)
	}
}
