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
	var gs *KVGrants
	for { // the meta leader may still be settling: retry the R3 create
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		gs, err = OpenGrants(cctx, natstest.JS(t, nc), 3)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("creating the R3 bucket: %v", err)
		}
	}
	stop := natstest.Stepdowns(t, natstest.URLConn(t, strings.Split(cl.URLs(), ",")[2]), "KV_toolbus_oauth")
	var wg sync.WaitGroup
	for s := range 8 {
		server := fmt.Sprint("srv", s)
		wg.Go(func() {
			for i := range 60 {
				octx, cancel := context.WithTimeout(ctx, 10*time.Second)
				g := &Grant{URL: "https://" + server + ".example/mcp", ClientID: "c", TokenURL: "https://" + server + ".example/token", AccessToken: fmt.Sprint("t", i)}
				var err error
				for {
					// A read answered by a lagging replica is of an
					// earlier revision: the write on it is refused, as
					// another writer's would have it, and read again.
					var rev uint64
					if _, rev, err = gs.Load(octx, server); err == nil {
						_, err = gs.Save(octx, server, g, rev)
					}
					if !errors.Is(err, ErrGrantChanged) {
						break
					}
				}
				cancel()
				if err != nil {
					t.Errorf("%s round %d: %v", server, i, err)
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
