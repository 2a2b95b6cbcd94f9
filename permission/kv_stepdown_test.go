package permission

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
)

// stepdownStore is a KVStore on an R3 cluster (its buckets made through
// node 1) and a connection to node 3 to step their leaders down with.
func stepdownStore(t *testing.T) (*KVStore, *nats.Conn) {
	t.Helper()
	st, admin, _ := stepdownCluster(t)
	return st, admin
}

// stepdownCluster is stepdownStore with its cluster, whose store's
// connection is to node 1.
func stepdownCluster(t *testing.T) (*KVStore, *nats.Conn, *natstest.TestCluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	urls := strings.Split(cl.URLs(), ",")
	nc, err := nats.Connect(cl.URLs(), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := natstest.Ctx(t)
	for { // the meta leader may still be settling: retry the R3 create
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := NewKVStore(cctx, natstest.JS(t, nc), &KVConfig{Replicas: 3})
		cancel()
		if err == nil {
			return st, natstest.URLConn(t, urls[2]), cl
		}
		if ctx.Err() != nil {
			t.Fatalf("creating the R3 buckets: %v", err)
		}
	}
}

// untilDone runs a write a test needs, each try with a deadline, until it
// is done: not the write under test.
func untilDone(fn func(ctx context.Context) error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return
		}
	}
}

// TestKVPolicyWritesThroughLeaderStepdowns: the policies bucket's stream
// leader steps down again and again while sessions' policies are
// changed. Every change is stored within its caller's deadline: a write
// whose answer the stepdown dropped was waited for until that deadline,
// and UpdateSession failed with context deadline exceeded (or at once
// with the stepdown's 503).
func TestKVPolicyWritesThroughLeaderStepdowns(t *testing.T) {
	st, admin := stepdownStore(t)
	stop := natstest.Stepdowns(t, admin, "KV_toolbus_permissions")
	modes := []Mode{ModeExplore, ModeBypass}
	var wg sync.WaitGroup
	for s := range 8 {
		session := fmt.Sprint("s", s)
		wg.Go(func() {
			for i := range 60 {
				want := modes[i%2]
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				p, err := st.UpdateSession(ctx, session, func(p *SessionPolicy) error { p.Mode = want; return nil })
				cancel()
				if err != nil || p.Mode != want {
					t.Errorf("%s round %d: UpdateSession = %+v, %v; want mode %s", session, i, p, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d leader stepdowns", stop())
	if t.Failed() {
		return
	}
	natstest.WaitFor(t, "every session's last mode to be read", func() bool {
		for s := range 8 {
			p, ok, err := st.LoadSession(context.Background(), fmt.Sprint("s", s))
			if err != nil || !ok || p.Mode != modes[59%2] {
				return false
			}
		}
		return true
	})
}
