package bus

import (
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKeepRefusedWhileAnotherIsInProcess: a replicated results bucket's
// leader refuses a kept final's write over a revision while another write
// of the key is proposed and not yet stored (10164), before looking at
// the revision. keep took that for a conflict, and keepLatest read the
// key again and wrote again at once, eight times, then gave the final up
// as "its key kept changing", though the key was still at the revision
// read and the other write might never be stored (a proposal lost in a
// stepdown, a mark of one left at the leader). It is made again while
// the write's time lasts (kv.Write), and never answered a conflict. Here
// the other write stays in process: the leader has lost its quorum.
func TestKeepRefusedWhileAnotherIsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster")
	}
	cl := natstest.NewCluster(t)
	r, err := openResults(natstest.Ctx(t), &ResultsOptions{JetStream: natstest.JS(t, natstest.URLConn(t, cl.URLs())), Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Uint64
	var meta wire.MetaEntry
	log := slog.New(slog.DiscardHandler)
	var rev uint64
	for rev == 0 { // the stream's first leader may still be settling
		none := uint64(0)
		rev, _ = r.keep(nil, true, "k", "k", toolkit.Final("k", "", "attempt 1"), &meta, log, &failed, &none, keptOf{attempt: 1})
	}
	stream := "KV_" + wire.BucketResults
	nc := cl.LoneStreamLeader(stream)
	r = &results{kv: r.kv, js: natstest.JS(t, nc), now: time.Now}
	// Another write of the key over the same revision, proposed and left
	// in process; the leader takes the connection's messages in order.
	other := nats.NewMsg("$KV." + wire.BucketResults + ".k")
	other.Reply = nc.NewRespInbox()
	other.Header.Set(wire.HeaderKVOperation, "DEL")
	other.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	if err := nc.PublishMsg(other); err != nil {
		t.Fatal(err)
	}
	got, conflict := r.keep(nc, true, "k", "k", toolkit.Final("k", "", "attempt 2"), &meta, log, &failed, &rev, keptOf{attempt: 2})
	switch {
	case got != 0:
		t.Fatalf("kept as revision %d without a quorum", got)
	case conflict:
		t.Fatalf("answered a conflict, though the key's last revision is still %d (the other write is in process, not stored)", rev)
	case failed.Load() != 1:
		t.Fatalf("%d failures counted, want the one write refused until its time ran out", failed.Load())
	}
	// The lone node's own store: its leader may have stepped down by now
	// for the quorum it lost (a loaded machine stretches the write's
	// time past that), and then no one answers a read of the key.
	if last := cl.LoneLastSeq(stream); last != rev {
		t.Fatalf("the stream's last message is %d without a quorum, want the key's revision %d", last, rev)
	}
}
