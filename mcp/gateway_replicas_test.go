package mcp

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayGroupsBucketReplicas: a gateway started on a 3-node cluster
// before any worker makes the group-state bucket, and made it with one
// replica whatever the fleet's, so the loss of its one node lost every
// session's groups; with KVReplicas 3 it makes it with three, as a worker
// given --kv-replicas 3 does, and without KVReplicas with one, as a worker
// without the flag. Replicas out of 0-5 are refused.
func TestGatewayGroupsBucketReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster")
	}
	cl := natstest.NewCluster(t)
	ctx := natstest.Ctx(t)
	js := natstest.JS(t, natstest.URLConn(t, cl.URLs()))
	natstest.WaitReplicated(ctx, t, js)
	for _, tt := range []struct {
		replicas, want int
	}{{3, 3}, {0, 1}} {
		g, err := NewGateway(ctx, natstest.URLConn(t, cl.URLs()), &GatewayOptions{KVReplicas: tt.replicas})
		if err != nil {
			t.Fatalf("KVReplicas %d: %v", tt.replicas, err)
		}
		g.Close()
		st, err := js.Stream(ctx, "KV_"+wire.BucketGroups)
		if err != nil {
			t.Fatal(err)
		}
		if n := st.CachedInfo().Config.Replicas; n != tt.want {
			t.Errorf("KVReplicas %d: the group-state bucket made with %d replicas, want %d", tt.replicas, n, tt.want)
		}
		if err := js.DeleteKeyValue(ctx, wire.BucketGroups); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{-1, 6} {
		if _, err := NewGateway(ctx, natstest.URLConn(t, cl.URLs()), &GatewayOptions{KVReplicas: n}); err == nil || !strings.Contains(err.Error(), "replicas") {
			t.Errorf("KVReplicas %d: err %v, want it refused", n, err)
		}
	}
	if _, err := js.KeyValue(ctx, wire.BucketGroups); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("a refused gateway made the bucket: %v", err)
	}
}
