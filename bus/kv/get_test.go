package kv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGetWithoutDeadlineIsBounded: a read whose context has no deadline
// gives up after the JetStream client's default timeout when nobody
// answers its request, as KeyValue.Get does, rather than wait for good.
// Nobody answers: a subscriber on the API subjects that never replies,
// as a stream leader lost mid-request leaves a request.
func TestGetWithoutDeadlineIsBounded(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	deaf := natstest.Conn(t, s)
	for _, subj := range []string{"$JS.API.DIRECT.GET.KV_deaf.>", "$JS.API.STREAM.MSG.GET.KV_deaf"} {
		if _, err := deaf.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := deaf.Flush(); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func(context.Context, jetstream.JetStream, string, string) (Entry, error){"Get": Get, "LeaderGet": LeaderGet} {
		done := make(chan error, 1)
		go func() {
			_, err := get(context.Background(), js, "deaf", "k")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: answered by nobody, yet no error", name)
			}
		case <-time.After(natstest.Guard):
			t.Fatalf("%s: without a deadline and unanswered, still waiting after %v (the client's default timeout is 1 s)", name, natstest.Guard)
		}
	}
}

// TestGetExpiredByMarker: in a bucket made with limit markers (nats kv add
// --marker-ttl; Open binds a bucket as it is), a key that expired is
// followed by the server's marker (Nats-Marker-Reason: MaxAge), which is
// the key's absence, as KeyValue.Get reads it, not an empty value.
func TestGetExpiredByMarker(t *testing.T) {
	js, b := newBucket(t, jetstream.KeyValueConfig{Bucket: "marked", TTL: time.Second, LimitMarkerTTL: time.Second})
	ctx := natstest.Ctx(t)
	if _, err := b.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the key expired", func() bool {
		_, err := b.Get(ctx, "k")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	if e, err := Get(ctx, js, "marked", "k"); err != nil || e.Found || !e.Marked {
		t.Fatalf("an expired key: %+v, %v", e, err)
	}
	if e, err := LeaderGet(ctx, js, "marked", "k"); err != nil || e.Found || !e.Marked {
		t.Fatalf("an expired key from the leader: %+v, %v", e, err)
	}
	// A delete is no marker.
	if err := b.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if e, err := Get(ctx, js, "marked", "k"); err != nil || e.Found || e.Marked {
		t.Fatalf("a deleted key: %+v, %v", e, err)
	}
	if e, err := LeaderGet(ctx, js, "marked", "k"); err != nil || e.Found || e.Marked {
		t.Fatalf("a deleted key from the leader: %+v, %v", e, err)
	}
}

// TestHeadersOfEveryRead: Get and LeaderGet both return a value's stored
// headers, so a reader can tell a value a compare-and-set stored
// (CASStored) from one put without it, or from a copy a direct get
// asked with no_hdr stored under a key (the value alone, no headers),
// whichever path its read takes.
func TestHeadersOfEveryRead(t *testing.T) {
	nc := natstest.Conn(t, natstest.Server(t))
	js := natstest.JS(t, nc)
	ctx := natstest.Ctx(t)
	b, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "hdrs"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "created", []byte("v")); err != nil {
		t.Fatal(err)
	}
	rev, err := b.Create(ctx, "updated", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(ctx, "updated", []byte("w"), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "put", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// A direct get of "created" asked with no_hdr, answered to the key "copy".
	if err := nc.PublishRequest("$JS.API.DIRECT.GET.KV_hdrs.$KV.hdrs.created", "$KV.hdrs.copy", []byte(`{"no_hdr":true}`)); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the copy stored", func() bool {
		_, err := b.Get(ctx, "copy")
		return err == nil
	})
	for key, cas := range map[string]bool{"created": true, "updated": true, "put": false, "copy": false} {
		for name, get := range map[string]func(context.Context, jetstream.JetStream, string, string) (Entry, error){"Get": Get, "LeaderGet": LeaderGet} {
			e, err := get(ctx, js, "hdrs", key)
			if err != nil || !e.Found {
				t.Fatalf("%s of %q: %+v, %v", name, key, e, err)
			}
			if got := CASStored(e.Header); got != cas {
				t.Errorf("%s of %q: CASStored = %v, want %v (headers %v)", name, key, got, cas, e.Header)
			}
		}
	}
}
