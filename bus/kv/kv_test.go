package kv

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
)

func TestTransientErrors(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nats.ErrNoResponders, true},
		{fmt.Errorf("wrapped: %w", nats.ErrNoResponders), true},
		{jetstream.ErrNoStreamResponse, true},
		{nats.ErrTimeout, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream cluster not available"}, true},
		// A stream whose replicas are being placed or elected (a node
		// down, the meta leader changing).
		{&jetstream.APIError{Code: 500, ErrorCode: 10118, Description: "stream is offline"}, true},
		{fmt.Errorf("binding: %w", &jetstream.APIError{Code: 500, ErrorCode: 10118, Description: "stream is offline"}), true},
		{jetstream.ErrKeyNotFound, false},
		{jetstream.ErrBadRequest, false},
		{jetstream.ErrBucketNotFound, false},
		{context.Canceled, false},
	}
	for _, tt := range tests {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestOpen: a missing bucket is created with the configuration; an
// existing one is bound as it is; a bad configuration is refused before
// anything is created.
func TestOpen(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	b, err := Open(ctx, js, jetstream.KeyValueConfig{Bucket: "b", History: 1, TTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, js, jetstream.KeyValueConfig{Bucket: "b", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	st, err := again.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.History() != 1 || st.Values() != 1 {
		t.Errorf("the existing bucket was changed: history %d, values %d", st.History(), st.Values())
	}
	if b, err := Bind(ctx, js, "nope"); b != nil || err != nil {
		t.Errorf("Bind of a missing bucket = %v, %v", b, err)
	}
	for _, cfg := range []jetstream.KeyValueConfig{{Bucket: "a.b"}, {Bucket: "r", Replicas: 6}, {Bucket: "t", TTL: -1}} {
		if _, err := Open(ctx, js, cfg); err == nil {
			t.Errorf("Open(%+v) accepted", cfg)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Sleep(cctx, 1<<40); err == nil {
		t.Error("Sleep ignored its context")
	}
}

// TestNoJetStream: without JetStream, no-responders means no JetStream
// and Bind finds no bucket; with JetStream, a missing bucket is not
// mistaken for it.
func TestNoJetStream(t *testing.T) {
	ctx := natstest.Ctx(t)
	bare := natstest.ServerWith(t, func(o *server.Options) { o.JetStream = false })
	js := natstest.JS(t, natstest.Conn(t, bare))
	if b, err := Bind(ctx, js, "b"); b != nil || err != nil {
		t.Errorf("Bind without JetStream: %v, %v; want no bucket", b, err)
	}
	if !NoJetStream(ctx, js, nats.ErrNoResponders) || !NoJetStream(ctx, js, jetstream.ErrNoStreamResponse) {
		t.Error("no responders without JetStream is not NoJetStream")
	}
	withJS := natstest.JS(t, natstest.Conn(t, natstest.Server(t)))
	if NoJetStream(ctx, withJS, nats.ErrNoResponders) || NoJetStream(ctx, withJS, context.Canceled) {
		t.Error("NoJetStream on a server with JetStream")
	}
	if b, err := Bind(ctx, withJS, "missing"); b != nil || err != nil {
		t.Errorf("Bind of a missing bucket: %v, %v", b, err)
	}
}

// TestGone: a request to a deleted bucket fails as during an election (no
// responders); Gone tells the two apart by asking for the stream.
func TestGone(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	b, err := Open(ctx, js, jetstream.KeyValueConfig{Bucket: "b", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	if Gone(ctx, js, "b", nats.ErrNoResponders) {
		t.Error("an existing bucket is gone")
	}
	if Gone(ctx, js, "b", jetstream.ErrKeyNotFound) {
		t.Error("a missing key is a missing bucket")
	}
	if err := js.DeleteKeyValue(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	_, err = b.Get(ctx, "k")
	if !Gone(ctx, js, "b", err) {
		t.Errorf("a deleted bucket is not gone (get: %v)", err)
	}
	if !Gone(ctx, js, "b", jetstream.ErrStreamNotFound) {
		t.Error("stream not found is not gone")
	}
}

// TestStreamConfigIsTheBuckets: a bounded bucket's stream, which
// OpenBounded makes itself (a role may make a bucket's stream but not
// change it), is the stream jetstream.CreateKeyValue makes for the same
// configuration, its MaxMsgs aside; the bucket binds and works as a KV
// bucket, and refuses a new key past its bound while an old one may be
// rewritten.
func TestStreamConfigIsTheBuckets(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	for _, cfg := range []jetstream.KeyValueConfig{
		{Bucket: "a", History: 1},
		{Bucket: "b", Description: "d", History: 3, TTL: time.Minute, Storage: jetstream.MemoryStorage, MaxValueSize: 1024, MaxBytes: 1 << 20, Compression: true},
		{Bucket: "c", TTL: time.Hour},
	} {
		want, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.Bucket + "_lib", Description: cfg.Description, History: cfg.History, TTL: cfg.TTL,
			Storage: cfg.Storage, MaxValueSize: cfg.MaxValueSize, MaxBytes: cfg.MaxBytes, Compression: cfg.Compression})
		if err != nil {
			t.Fatal(err)
		}
		b, err := OpenBounded(ctx, js, cfg, 2)
		if err != nil {
			t.Fatalf("%s: %v", cfg.Bucket, err)
		}
		ws, _ := js.Stream(ctx, "KV_"+want.Bucket())
		gs, _ := js.Stream(ctx, "KV_"+cfg.Bucket)
		w, g := ws.CachedInfo().Config, gs.CachedInfo().Config
		if g.MaxMsgs != 2 {
			t.Errorf("%s: MaxMsgs %d, want 2", cfg.Bucket, g.MaxMsgs)
		}
		w.Name, w.Subjects, w.MaxMsgs = g.Name, g.Subjects, g.MaxMsgs
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s: the stream is\n%+v\nCreateKeyValue's\n%+v", cfg.Bucket, g, w)
		}
		if _, err := b.Put(ctx, "k1", []byte("1")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(ctx, "k2", []byte("2")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(ctx, "k3", []byte("3")); !Full(err) {
			t.Errorf("%s: a third key in a bucket of 2: %v", cfg.Bucket, err)
		}
		if cfg.History == 1 {
			if _, err := b.Put(ctx, "k1", []byte("one")); err != nil {
				t.Errorf("%s: rewriting a key of a full bucket: %v", cfg.Bucket, err)
			}
		}
	}
}

// TestOpenWaitsOutAnElection: a worker starting while its cluster has no
// quorum for the moment (two of three nodes down: no meta leader, the
// bucket's stream without a leader) binds its bucket once they are back,
// within its context, instead of failing its start.
func TestOpenWaitsOutAnElection(t *testing.T) {
	cl := natstest.NewCluster(t)
	js := natstest.JS(t, natstest.URLConn(t, cl.URLs()))
	cfg := jetstream.KeyValueConfig{Bucket: "elected", Replicas: 3}
	if _, err := Open(natstest.Ctx(t), js, cfg); err != nil {
		t.Fatal(err)
	}
	restore := cl.LoseQuorum() // the client's node stays up
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan error, 2)
	go func() {
		_, err := Open(ctx, js, cfg)
		done <- err
	}()
	go func() {
		_, err := Bind(ctx, js, cfg.Bucket)
		done <- err
	}()
	// While the quorum is missing, neither fails (they failed at once, or
	// waited out the whole context, without retrying); the replica left
	// up may answer, so either may bind meanwhile.
	pending := 2
	for wait := time.After(2 * time.Second); pending > 0; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("without a quorum, gave up: %v", err)
			}
			pending--
			continue
		case <-wait:
		}
		break
	}
	restore()
	for range pending {
		if err := <-done; err != nil {
			t.Fatalf("after the nodes came back: %v", err)
		}
	}
}
