package main_test

import (
	"path/filepath"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestPermissionBucketsFollowKVReplicas: a worker given --kv-replicas 3
// and no permissions.kv_replicas makes the permission buckets with three
// replicas, as every other KV bucket it makes: they had one, on one node,
// and with that node down every call of the fleet ended unavailable
// (PermissionStateError) and a worker could not start. So the durable
// path's streams without durable.replicas: with the one node holding
// them down, no durable call could be made, taken or cancelled.
func TestPermissionBucketsFollowKVReplicas(t *testing.T) {
	cl := natstest.NewCluster(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "worker.yaml")
	mustWrite(t, cfg, "builtins:\n  tools: [{name: echo}]\npermissions:\n  mode: default\n")
	startWorker(t, "--nats", cl.URLs(), "--kv-replicas", "3", "--config", cfg, "--instance", "w1")
	js := natstest.JS(t, natstest.URLConn(t, cl.URLs()))
	for _, stream := range []string{"KV_" + wire.BucketPermissions, "KV_" + wire.BucketApprovals, "KV_" + wire.BucketGroups, wire.StreamCalls, wire.StreamCancels} {
		st, err := js.Stream(natstest.Ctx(t), stream)
		if err != nil {
			t.Fatalf("%s: %v", stream, err)
		}
		if n := st.CachedInfo().Config.Replicas; n != 3 {
			t.Errorf("stream %s made with %d replicas, want --kv-replicas 3", stream, n)
		}
	}
}
