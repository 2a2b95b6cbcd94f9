package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVGrantsThroughLeaderStepdowns: the grants bucket's stream leader
// steps down again and again while servers' grants are refreshed (read,
// then stored on the revision read). Every refresh is stored within its
// caller's deadline and read back: a write whose answer the stepdown
// dropped was waited for until that deadline, and Save failed with
// context deadline exceeded (or at once with the stepdown's 503).
func TestKVGrantsThroughLeaderStepdowns(t *testing.T) {
	gs, stop := stepdownGrants(t)
	ctx := natstest.Ctx(t)
	onServers(t, func(i int) bool { return i < 60 }, func(server string, i int) error {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return saveGrant(octx, gs, server, testGrant(server, i))
	})
	t.Logf("%d leader stepdowns", stop())
	if t.Failed() {
		return
	}
	natstest.WaitFor(t, "every server's last grant to be read", func() bool {
		for s := range 8 {
			g, _, err := gs.Load(ctx, fmt.Sprint("srv", s))
			if err != nil || g == nil || g.AccessToken != "t59" {
				return false
			}
		}
		return true
	})
}

// stepdownGrants is a KVGrants on an R3 cluster (its bucket made through
// node 1) whose bucket's stream leader is stepped down again and again,
// through node 3, until stop is called (at the test's end at the latest).
func stepdownGrants(t *testing.T) (gs *KVGrants, stop func() int) {
	t.Helper()
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	nc, err := nats.Connect(cl.URLs(), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := natstest.Ctx(t)
	for { // the meta leader may still be settling: retry the R3 create
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		gs, err = OpenGrants(cctx, natstest.JS(t, nc), 3)
		cancel()
		if err == nil {
			return gs, natstest.Stepdowns(t, natstest.URLConn(t, strings.Split(cl.URLs(), ",")[2]), "KV_toolbus_oauth")
		}
		if ctx.Err() != nil {
			t.Fatalf("creating the R3 bucket: %v", err)
		}
	}
}

// TestKVGrantDeleteThroughLeaderStepdowns: the grants bucket's stream
// leader steps down again and again while servers' grants are stored and
// deleted. Every delete is done within its caller's deadline: one whose
// answer the stepdown dropped was waited for until that deadline, and
// Delete failed with context deadline exceeded (or at once with the
// stepdown's 503).
func TestKVGrantDeleteThroughLeaderStepdowns(t *testing.T) {
	gs, stop := stepdownGrants(t)
	end := time.Now().Add(8 * time.Second)
	onServers(t, func(int) bool { return time.Now().Before(end) }, func(server string, i int) error {
		for { // stored first, whatever it takes: not the write under test
			octx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := saveGrant(octx, gs, server, testGrant(server, i))
			cancel()
			if err == nil {
				break
			}
		}
		octx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return gs.Delete(octx, server)
	})
	t.Logf("%d leader stepdowns", stop())
	if t.Failed() {
		return
	}
	natstest.WaitFor(t, "every server's grant to be gone", func() bool {
		for s := range 8 {
			if g, _, err := gs.Load(context.Background(), fmt.Sprint("srv", s)); err != nil || g != nil {
				return false
			}
		}
		return true
	})
}

// onServers runs round for 8 servers in parallel, a round after the
// other while more holds, failing the test on a round's error.
func onServers(t *testing.T, more func(round int) bool, round func(server string, i int) error) {
	var wg sync.WaitGroup
	for s := range 8 {
		server := fmt.Sprint("srv", s)
		wg.Go(func() {
			for i := 0; more(i) && !t.Failed(); i++ {
				if err := round(server, i); err != nil {
					t.Errorf("%s round %d: %v", server, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// testGrant is server's grant of round i.
func testGrant(server string, i int) *Grant {
	return &Grant{URL: "https://" + server + ".example/mcp", ClientID: "c", TokenURL: "https://" + server + ".example/token", AccessToken: fmt.Sprint("t", i)}
}

// saveGrant stores g as server's grant on the revision read. A read
// answered by a lagging replica is of an earlier revision: the write on
// it is refused, as another writer's would have it, and read again.
func saveGrant(ctx context.Context, gs *KVGrants, server string, g *Grant) error {
	for {
		_, rev, err := gs.Load(ctx, server)
		if err == nil {
			_, err = gs.Save(ctx, server, g, rev)
		}
		if !errors.Is(err, ErrGrantChanged) {
			return err
		}
	}
}
