package bus_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVStateThroughLeaderStepdowns: the group-state bucket's stream
// leader steps down again and again while a session's groups are stored
// on one node and loaded on another. Every Store and Load ends within a
// few seconds, with the state stored: a request whose answer the leader
// stepping down dropped waited for it until its deadline (a call's, when
// reset_tools stores), and failed there.
func TestKVStateThroughLeaderStepdowns(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	w, r, admin := kvStateOnCluster(t)
	ctx := natstest.Ctx(t)
	stop := natstest.Stepdowns(t, admin, "KV_toolbus_groups")
	for i := range 150 {
		want := []string{fmt.Sprint("g", i)}
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rev, err := w.Store(octx, "sess", want)
		if err != nil {
			cancel()
			t.Fatalf("round %d: Store: %v", i, err)
		}
		got, grev, ok, err := r.Load(octx, "sess", rev)
		cancel()
		if err != nil || !ok || grev < rev || !slices.Equal(got, want) {
			t.Fatalf("round %d: Load on node 3 = %v, %d, %v, %v; want %v at >= %d", i, got, grev, ok, err, want, rev)
		}
	}
	t.Logf("%d leader stepdowns", stop())
}

// kvStateOnCluster makes the group-state bucket (R3) on a 3-node
// cluster and returns it as seen from node 1 (w) and from node 3 (r),
// and a connection to node 2.
func kvStateOnCluster(t *testing.T) (w, r *bus.KVState, node2 *nats.Conn) {
	cl := natstest.NewCluster(t)
	ctx := natstest.Ctx(t)
	for { // the meta leader may still be settling: retry the R3 create
		var err error
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		w, err = bus.NewKVState(cctx, natstest.JS(t, clusterConn(t, cl, 0)), &bus.KVStateOptions{Replicas: 3})
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("creating the R3 bucket: %v", err)
		}
	}
	r, err := bus.NewKVState(ctx, natstest.JS(t, clusterConn(t, cl, 2)), &bus.KVStateOptions{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	return w, r, clusterConn(t, cl, 1)
}
