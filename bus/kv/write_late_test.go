package kv

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
)

// storedLate is a JetStream whose first publish is on its way when its
// caller's context ends and is stored only later, after the writer has
// read the key (a stream leader storing a message whose answer it
// dropped, a proposal committed after the read): that publish fails, and
// the message is kept for the test to store. end ends the caller's
// context: in the publish (ctx ended during its attempt), or on the
// writer's first read of the key (ctx ended while it paused between
// attempts, its attempt unanswered within its bound).
type storedLate struct {
	jetstream.JetStream
	end       func()
	endOnRead bool

	mu    sync.Mutex
	first *nats.Msg // the publish on its way
	read  bool
}

func (s *storedLate) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	s.mu.Lock()
	first := s.first == nil
	if first {
		s.first = m
	}
	s.mu.Unlock()
	if !first {
		return s.JetStream.PublishMsg(ctx, m, opts...)
	}
	if s.endOnRead {
		return nil, context.DeadlineExceeded // the attempt's bound
	}
	s.end()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *storedLate) Conn() *nats.Conn {
	s.mu.Lock()
	if s.endOnRead && !s.read {
		s.read = true
		s.end()
	}
	s.mu.Unlock()
	return s.JetStream.Conn()
}

// TestWriteStoredAfterContextEnded: a write whose attempt was on its way
// when its context ended, and which the server stores only after the
// writer read the key, is not answered as failed: the writer made it
// again under its message id within WriteTry past ctx's end, which the
// server stores (or answers as the duplicate of the first). It was
// answered with ctx's error on the strength of that one read (or
// without any read, when ctx ended in the pause between attempts), and
// then stored: a write that happened answered as one that did not.
func TestWriteStoredAfterContextEnded(t *testing.T) {
	nc := natstest.Conn(t, natstest.Server(t))
	js := natstest.JS(t, nc)
	b, err := js.CreateKeyValue(natstest.Ctx(t), jetstream.KeyValueConfig{Bucket: "late"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		endOnRead bool
	}{{"ended in the attempt", false}, {"ended in the pause", true}} {
		key := map[bool]string{false: "attempt", true: "pause"}[tc.endOnRead]
		ctx, cancel := context.WithCancel(context.Background())
		s := &storedLate{JetStream: js, end: cancel, endOnRead: tc.endOnRead}
		rev, werr := Write(ctx, s, "late", key, nil, []byte("v"))
		cancel()
		// The first attempt reaches the stream now.
		s.mu.Lock()
		first := s.first
		s.mu.Unlock()
		if first == nil {
			t.Fatalf("%s: no publish was made", tc.name)
		}
		if _, err := js.PublishMsg(natstest.Ctx(t), first); err != nil {
			t.Fatalf("%s: storing the first attempt late: %v", tc.name, err)
		}
		e, err := b.Get(natstest.Ctx(t), key)
		if err != nil {
			t.Fatalf("%s: reading the key: %v", tc.name, err)
		}
		switch {
		case werr != nil:
			t.Errorf("%s: answered %v, yet stored at revision %d", tc.name, werr, e.Revision())
		case rev != e.Revision():
			t.Errorf("%s: answered revision %d, the key's is %d", tc.name, rev, e.Revision())
		}
	}
}
