package bus_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestSessionPinnedThroughLeaderStepdowns: the sessions bucket's stream
// leader steps down again and again while new sessions are claimed. Every
// session is pinned to the worker that claims it: a pin read or write
// whose answer the leader stepping down dropped was waited for until the
// route's 5 s were over, and the call ran unpinned, its session's state
// on whichever worker the next call reached.
func TestSessionPinnedThroughLeaderStepdowns(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	c := natstest.NewCluster(t)
	nodes := c.Nodes()
	conn := func(i int) *nats.Conn { return natstest.URLConn(t, nodes[i].ClientURL()) }
	so := func() *bus.SessionsOptions { return &bus.SessionsOptions{Replicas: 3} }
	rvWorker(t, conn(0), "w1", so())
	rvWorker(t, conn(1), "w2", so())
	in := newRVInbox(t, conn(2), []string{nodes[0].ClientURL(), nodes[1].ClientURL(), nodes[2].ClientURL()})
	admin := conn(2)
	stop := natstest.Stepdowns(t, admin, "KV_toolbus_sessions")
	for i := range 100 {
		f := rvFinal(t, in.call(t, wire.CallSubject("put", ""), nil, fmt.Sprint("s", i), "v", guard))
		if f.meta(wire.MetaSessionWorker) == "" {
			t.Errorf("s%d ran unpinned: %+v", i, f.Final)
		}
	}
	t.Logf("%d leader stepdowns", stop())
}
