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
	js, b := newBucket(t, jetstream.KeyValueConfig{Bucket: "ended"})
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
			_, err = Delete(ctx, js, "ended", "k", e.Revision())
			return err
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

// refusedAgain is a JetStream whose first publish is stored but its
// answer lost (an attempt's bound), whose next ones are refused on their
// expected revision (a replicated stream checks that before it finds
// the message id a duplicate: the first attempt's own write is the
// key's last now), and whose first unread reads go to a server without
// the bucket (a stream leader being elected).
type refusedAgain struct {
	jetstream.JetStream
	elsewhere  *nats.Conn
	publishes  int
	conns      int
	unreadable int
}

func (r *refusedAgain) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if r.publishes++; r.publishes > 1 {
		return nil, &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence"}
	}
	if _, err := r.JetStream.PublishMsg(ctx, m, opts...); err != nil {
		return nil, err
	}
	return nil, context.DeadlineExceeded
}

func (r *refusedAgain) Conn() *nats.Conn {
	if r.conns++; r.conns <= r.unreadable {
		return r.elsewhere
	}
	return r.JetStream.Conn()
}

// TestWriteRefusedAgainWhileUnread: a conditional write stored but
// unanswered, whose attempts made again are refused on their expected
// revision (its own write is the key's last) while the key cannot be
// read to tell so, is made again until it can: it was answered a
// revision mismatch, so an approval's use stored by one worker was taken
// for another's, and neither used it (seen once through leader
// stepdowns under load).
func TestWriteRefusedAgainWhileUnread(t *testing.T) {
	js, b := newBucket(t, jetstream.KeyValueConfig{Bucket: "again"})
	rev, err := b.Put(natstest.Ctx(t), "k", []byte("approval"))
	if err != nil {
		t.Fatal(err)
	}
	r := &refusedAgain{JetStream: js, elsewhere: natstest.Conn(t, natstest.Server(t)), unreadable: 2}
	if _, err := Delete(natstest.Ctx(t), r, "again", "k", rev); err != nil {
		t.Fatalf("stored, then refused while unread: %v", err)
	}
}

// newBucket starts a server and makes the bucket cfg on it: it returns
// the server's JetStream and the bucket.
func newBucket(t *testing.T, cfg jetstream.KeyValueConfig) (jetstream.JetStream, jetstream.KeyValue) {
	t.Helper()
	js := natstest.JS(t, natstest.Conn(t, natstest.Server(t)))
	b, err := js.CreateKeyValue(natstest.Ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return js, b
}

// TestDeleteAnswersItsRevision: a deletion answers the revision its
// marker was stored at, also when its answer was lost as its context
// ended (a reader waiting for at least that revision must be given it):
// Delete answered only an error, so a caller wanting the revision wrote
// the marker by hand.
func TestDeleteAnswersItsRevision(t *testing.T) {
	js, b := newBucket(t, jetstream.KeyValueConfig{Bucket: "delrev"})
	for _, tc := range []struct {
		name        string
		conditional bool
		lost        bool
	}{{"unconditional", false, false}, {"conditional", true, false}, {"unconditional, answer lost", false, true}, {"conditional, answer lost", true, true}} {
		put, err := b.Put(natstest.Ctx(t), "k", []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		var rev uint64
		if tc.conditional {
			rev = put
		}
		ctx, cancel := context.WithCancel(context.Background())
		var w jetstream.JetStream = js
		if tc.lost {
			w = answerLost{JetStream: js, end: cancel}
		}
		n, err := Delete(ctx, w, "delrev", "k", rev)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		e, err := LeaderGet(natstest.Ctx(t), js, "delrev", "k")
		switch {
		case err != nil:
			t.Fatalf("%s: reading the key: %v", tc.name, err)
		case e.Found:
			t.Errorf("%s: the key still has a value", tc.name)
		case n == 0 || n != e.Revision:
			t.Errorf("%s: answered revision %d, the deletion's is %d", tc.name, n, e.Revision)
		}
	}
}
