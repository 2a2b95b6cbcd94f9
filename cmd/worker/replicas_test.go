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
// (PermissionStateError) and a worker could not start.
func TestPermissionBucketsFollowKVReplicas(t *testing.T) {
	cl := natstest.NewCluster(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "worker.yaml")
	mustWrite(t, cfg, "builtins:\n  tools: [{name: echo}]\npermissions:\n  mode: default\n")
	startWorker(t, "--nats", cl.URLs(), "--kv-replicas", "3", "--config", cfg, "--instance", "w1")
	js := natstest.JS(t, natstest.URLConn(t, cl.URLs()))
	for _, bucket := range []string{wire.BucketPermissions, wire.BucketApprovals, wire.BucketGroups} {
		st, err := js.Stream(natstest.Ctx(t), "KV_"+bucket)
		if err != nil {
			t.Fatalf("%s: %v", bucket, err)
		}
		if n := st.CachedInfo().Config.Replicas; n != 3 {
			t.Errorf("bucket %s made with %d replicas, want --kv-replicas 3", bucket, n)
		}
	}
}
