package bus_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestFullReplicatedSessionsBucketSaysTheMove: a replicated stream bound
// by its message count (DiscardNew) refuses every write once full, the
// rewrite of an existing key too (a single server's allows it). The
// sessions pinned to a worker that stops can then not be taken over:
// their calls ran wherever they landed, unpinned, and no final said that
// the session's state was gone with its worker. They still run unpinned
// (nothing can be pinned), but each final says so.
func TestFullReplicatedSessionsBucketSaysTheMove(t *testing.T) {
	c := natstest.NewCluster(t)
	nodes := c.Nodes()
	conn := func(i int) *nats.Conn { return natstest.URLConn(t, nodes[i].ClientURL()) }
	so := func() *bus.SessionsOptions { return &bus.SessionsOptions{Replicas: 3, MaxSessions: 3} }
	w1 := rvWorker(t, conn(0), "w1", so())
	rvWorker(t, conn(1), "w2", so())
	in := newRVInbox(t, conn(0), []string{nodes[0].ClientURL(), nodes[1].ClientURL(), nodes[2].ClientURL()})
	for i := range 3 {
		if f := rvFinal(t, in.call(t, wire.PinnedSubject("w1", "put", ""), nil, fmt.Sprint("s", i), "v", 10*time.Second)); f.meta(wire.MetaSessionWorker) != "w1" {
			t.Fatalf("claim: %+v", f.Final)
		}
	}
	w1.Stop(ctxT(t)) // gone: its sessions move with their next call
	f := rvFinal(t, in.call(t, wire.PinnedSubject("w2", "get", ""), nil, "s0", "", 10*time.Second))
	if f.meta(wire.MetaSessionMovedFrom) != "w1" || f.meta(wire.MetaSessionWorker) != "" || !strings.Contains(f.text(), "worker w1, which is gone") {
		t.Fatalf("the call of a session whose worker is gone, in a full bucket: %+v", f.Final)
	}
}
