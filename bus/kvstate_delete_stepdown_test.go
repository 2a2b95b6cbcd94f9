package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVStateDeleteThroughLeaderStepdowns: the group-state bucket's
// stream leader steps down again and again while sessions' groups are
// stored and deleted on one node. Every Delete ends with the state gone,
// as a Load on another node at the deletion's revision sees: a delete
// whose answer the leader stepping down dropped was waited for until the
// deadline, and Delete failed there.
func TestKVStateDeleteThroughLeaderStepdowns(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	w, r, admin := kvStateOnCluster(t)
	ctx := natstest.Ctx(t)
	stop := natstest.Stepdowns(t, admin, "KV_toolbus_groups")
	var wg sync.WaitGroup
	for s := range 8 {
		session := fmt.Sprint("s", s)
		wg.Go(func() {
			for i := range 50 {
				octx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := w.Store(octx, session, []string{fmt.Sprint("g", i)})
				if err != nil {
					cancel()
					t.Errorf("%s round %d: Store: %v", session, i, err)
					return
				}
				drev, err := w.Delete(octx, session)
				if err != nil {
					cancel()
					t.Errorf("%s round %d: Delete: %v", session, i, err)
					return
				}
				got, _, ok, err := r.Load(octx, session, drev)
				cancel()
				if err != nil || ok {
					t.Errorf("%s round %d: Load on node 3 at the deletion's revision %d = %v, %v, %v; want nothing stored", session, i, drev, got, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d leader stepdowns", stop())
}
