package bus_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

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
	cl := natstest.NewCluster(t)
	ctx := natstest.Ctx(t)
	var w *bus.KVState
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
	admin := clusterConn(t, cl, 1)
	stop, stopped := make(chan struct{}), make(chan int, 1)
	go func() {
		n := 0
		defer func() { stopped <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := admin.Request("$JS.API.STREAM.LEADER.STEPDOWN.KV_toolbus_groups", nil, 5*time.Second); err == nil {
				n++
			}
		}
	}()
	for i := range 150 {
		want := []string{fmt.Sprint("g", i)}
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rev, err := w.Store(octx, "sess", want)
		if err != nil {
			cancel()
			close(stop)
			t.Fatalf("round %d: Store: %v", i, err)
		}
		got, grev, ok, err := r.Load(octx, "sess", rev)
		cancel()
		if err != nil || !ok || grev < rev || !slices.Equal(got, want) {
			close(stop)
			t.Fatalf("round %d: Load on node 3 = %v, %d, %v, %v; want %v at >= %d", i, got, grev, ok, err, want, rev)
		}
	}
	close(stop)
	t.Logf("%d leader stepdowns", <-stopped)
}
