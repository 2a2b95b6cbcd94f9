package kv

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestWriteRefusedWhileAnotherIsInProcess: a replicated bucket's stream
// leader refuses a conditional write of a key while another write of it
// is proposed but not yet stored (10164, "wrong last sequence"), before
// looking at the revision. That refusal was taken for a revision
// mismatch, though the key's last revision was still the one expected
// and the other write might never be stored (a proposal lost in a
// stepdown; the leader's in-process mark left behind, seen with
// nats-server 2.15.2 through stepdowns under load): two workers consuming
// an approval were both told it was used by the other, and neither used
// it. Here the other write stays in process: the leader has lost its
// quorum.
func TestWriteRefusedWhileAnotherIsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster")
	}
	cl := natstest.NewCluster(t)
	js := natstest.JS(t, natstest.URLConn(t, cl.URLs()))
	b, err := Open(natstest.Ctx(t), js, jetstream.KeyValueConfig{Bucket: "busy", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	var rev uint64
	for rev == 0 { // the stream's first leader may still be settling
		ctx, cancel := context.WithTimeout(natstest.Ctx(t), 5*time.Second)
		rev, _ = b.Put(ctx, "k", []byte("approval"))
		cancel()
	}
	// The stream leader alone stays up, with a client of its own; it
	// leads on without a quorum for a while, taking proposals it cannot
	// commit.
	nc := cl.LoneStreamLeader("KV_busy")
	js = natstest.JS(t, nc)
	// Another worker's conditional delete, proposed and left in process;
	// its answer is not waited for. The leader takes the connection's
	// messages in order: this one first.
	other := nats.NewMsg("$KV.busy.k")
	other.Reply = nc.NewRespInbox()
	other.Header.Set(wire.HeaderKVOperation, "DEL")
	other.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	other.Header.Set(jetstream.MsgIDHeader, "other")
	if err := nc.PublishMsg(other); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*WriteTry)
	defer cancel()
	_, err = Delete(ctx, js, "busy", "k", rev)
	switch {
	case err == nil:
		t.Fatal("answered as stored without a quorum")
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		t.Fatalf("answered %v, though the key's last revision is still %d (the other write is in process, not stored)", err, rev)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("answered %v, want an error wrapping its context's end", err)
	}
	// Read from the lone node's store: its leadership may have ended by
	// now for the quorum it lost.
	if last := cl.LoneLastSeq("KV_busy"); last != rev {
		t.Fatalf("the stream's last message is %d without a quorum, want the key's revision %d", last, rev)
	}
}
