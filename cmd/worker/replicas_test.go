package main_test

import (
	"path/filepath"
	"strings"
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

// TestKVReplicasOnOneServer: --kv-replicas 3 against a NATS server that is
// not a cluster stops the worker at once, exit 1, saying the replicas need
// a cluster: the server refuses them for good (replicas > 1 not supported
// in non-clustered mode), and the worker retried binding the group-state
// bucket for two minutes, as permissions.kv_replicas and durable.replicas
// above 1 already stopped it at once.
func TestKVReplicasOnOneServer(t *testing.T) {
	s := natstest.Embedded(t, true)
	p := startProc(t, cleanEnv(t), workerBin, "--nats", s.ClientURL(), "--kv-replicas", "3", "--instance", "w3")
	code := p.exit(t)
	out := p.stderr.String()
	if code != 1 || !strings.Contains(out, "not supported in non-clustered mode") || !strings.Contains(out, "need a NATS cluster") {
		t.Fatalf("exit %d, want 1 saying the replicas need a cluster:\n%s", code, out)
	}
}
