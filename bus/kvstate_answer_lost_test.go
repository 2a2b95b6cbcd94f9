package bus

import (
	"context"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
)

// answerLostJS is a JetStream whose publishes are stored by the server
// but whose answers are lost as the caller's context ends: end is called
// once the message is stored, and the publish fails with ctx's error, as
// one whose answer a stream leader's stepdown dropped while the caller
// cancelled its reset_tools (or its deadline passed).
type answerLostJS struct {
	jetstream.JetStream
	end func()
}

func (a answerLostJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if _, err := a.JetStream.PublishMsg(context.WithoutCancel(ctx), m, opts...); err != nil {
		return nil, err
	}
	a.end()
	<-ctx.Done()
	return nil, ctx.Err()
}

// answerLostKV is answerLostJS for writes made through a bound bucket's
// own methods.
type answerLostKV struct {
	jetstream.KeyValue
	end func()
}

func (a answerLostKV) lost(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	a.end()
	<-ctx.Done()
	return ctx.Err()
}

func (a answerLostKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	_, err := a.KeyValue.Update(context.WithoutCancel(ctx), key, value, rev)
	return 0, a.lost(ctx, err)
}

func (a answerLostKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	_, err := a.KeyValue.Create(context.WithoutCancel(ctx), key, value, opts...)
	return 0, a.lost(ctx, err)
}

func (a answerLostKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return a.lost(ctx, a.KeyValue.Delete(context.WithoutCancel(ctx), key, opts...))
}

// TestKVStateWriteLandedAsContextEnded: a session's groups stored (or
// deleted) by the server whose answer was lost as the caller's context
// ended are answered with the write's revision, not the context's error.
// Told it failed, the caller was left without the revision its later
// calls carry, so they could be served the groups from before (read your
// writes broken), and the reset_tools was reported failed though it took
// effect.
func TestKVStateWriteLandedAsContextEnded(t *testing.T) {
	nc := natstest.Conn(t, natstest.Server(t))
	js := natstest.JS(t, nc)
	st, err := NewKVState(natstest.Ctx(t), js, &KVStateOptions{Bucket: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	// lost is st with every write's answer lost as ctx ends.
	lost := func(end func()) *KVState {
		l := *st
		l.js = answerLostJS{JetStream: js, end: end}
		l.kv = answerLostKV{KeyValue: st.kv, end: end}
		return &l
	}
	check := func(what string, rev uint64, want []string, wantFound bool) {
		t.Helper()
		groups, got, found, err := st.Load(natstest.Ctx(t), "s1", rev)
		if err != nil || found != wantFound || !slices.Equal(groups, want) || got != rev {
			t.Errorf("%s: loaded %v (found %v) at revision %d, %v; want %v (found %v) at revision %d", what, groups, found, got, err, want, wantFound, rev)
		}
	}
	for _, op := range []struct {
		name      string
		write     func(ctx context.Context, st *KVState) (uint64, error)
		want      []string
		wantFound bool
	}{
		{"created", func(ctx context.Context, st *KVState) (uint64, error) {
			return st.Store(ctx, "s1", []string{"files"})
		}, []string{"files"}, true},
		{"updated", func(ctx context.Context, st *KVState) (uint64, error) {
			return st.Store(ctx, "s1", []string{"files", "web"})
		}, []string{"files", "web"}, true},
		{"deleted", func(ctx context.Context, st *KVState) (uint64, error) {
			return st.Delete(ctx, "s1")
		}, nil, false},
		{"created again", func(ctx context.Context, st *KVState) (uint64, error) {
			return st.Store(ctx, "s1", []string{"web"})
		}, []string{"web"}, true},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		rev, err := op.write(ctx, lost(cancel))
		cancel()
		if err != nil {
			t.Errorf("%s: stored, yet answered %v", op.name, err)
			continue
		}
		check(op.name, rev, op.want, op.wantFound)
	}
}
