package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestMCPBucketsFollowKVReplicas: on a 3-node cluster, `toolctl mcp
// serve` and `mcp stdio` started before any worker made the group-state
// bucket, and `mcp login` and `mcp logout` the grants bucket, with one
// replica whatever the workers' --kv-replicas, so the loss of that one
// node lost every session's groups, or every mounted server's grant.
// With --kv-replicas 3 they make them with three, as a worker does;
// without it with one, as a worker without it.
func TestMCPBucketsFollowKVReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster")
	}
	cl := natstest.NewCluster(t)
	ctx := natstest.Ctx(t)
	js := natstest.JS(t, natstest.URLConn(t, cl.URLs()))
	natstest.WaitReplicated(ctx, t, js)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte("mcp_servers:\n  - name: tracker\n    url: http://127.0.0.1:1/mcp\n    oauth: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// serve runs until its context ends: it is stopped once its bucket
	// exists.
	serve := func(flags ...string) {
		sctx, cancel := context.WithCancel(ctx)
		var stderr natstest.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(sctx, append([]string{"--nats", cl.URLs(), "mcp", "serve", "--listen", "127.0.0.1:0"}, flags...), strings.NewReader(""), &stderr, &stderr)
		}()
		natstest.WaitFor(t, "the gateway to serve", func() bool {
			return strings.Contains(stderr.String(), "MCP gateway listening") || len(done) > 0
		})
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("mcp serve %q: exit %d\n%s", flags, code, stderr.String())
		}
	}
	other := func(args ...string) func(...string) {
		return func(flags ...string) {
			code, out, errs := toolctl(t, append(append([]string{"--nats", cl.URLs(), "--config", cfg}, args...), flags...)...)
			if code != exitOK {
				t.Errorf("%q %q: exit %d\n%s%s", args, flags, code, out, errs)
			}
		}
	}
	for _, tt := range []struct {
		name   string
		run    func(...string)
		bucket string
	}{
		{"mcp serve", serve, wire.BucketGroups},
		{"mcp stdio", other("mcp", "stdio"), wire.BucketGroups},
		{"mcp logout", other("mcp", "logout", "tracker"), wire.BucketOAuth},
	} {
		for _, r := range []struct {
			flags []string
			want  int
		}{{[]string{"--kv-replicas", "3"}, 3}, {nil, 1}} {
			tt.run(r.flags...)
			st, err := js.Stream(ctx, "KV_"+tt.bucket)
			if err != nil {
				t.Fatalf("%s %q: the bucket %s: %v", tt.name, r.flags, tt.bucket, err)
			}
			if n := st.CachedInfo().Config.Replicas; n != r.want {
				t.Errorf("%s %q made the bucket %s with %d replicas, want %d", tt.name, r.flags, tt.bucket, n, r.want)
			}
			if err := js.DeleteKeyValue(ctx, tt.bucket); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Replicas out of 1-5 are refused before anything is made.
	for _, args := range [][]string{
		{"mcp", "serve", "--listen", "127.0.0.1:0", "--kv-replicas", "0"},
		{"mcp", "stdio", "--kv-replicas", "6"},
		{"mcp", "login", "tracker", "--kv-replicas", "-1"},
	} {
		code, _, errs := toolctl(t, append([]string{"--nats", cl.URLs(), "--config", cfg}, args...)...)
		if code != exitUsage || !strings.Contains(errs, "--kv-replicas") || !strings.Contains(errs, "1 to 5") {
			t.Errorf("%q: exit %d, want %d naming --kv-replicas and its range:\n%s", args, code, exitUsage, errs)
		}
	}
	for _, b := range []string{wire.BucketGroups, wire.BucketOAuth} {
		if _, err := js.KeyValue(ctx, b); !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Errorf("a refused command made the bucket %s: %v", b, err)
		}
	}
}

// TestMCPKVReplicasOnOneServer: --kv-replicas 3 against a NATS server
// that is no cluster stops `toolctl mcp stdio` and `mcp logout` at once,
// exit 1, saying the replicas need a cluster, as a worker's does.
func TestMCPKVReplicasOnOneServer(t *testing.T) {
	s := natstest.Embedded(t, true)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte("mcp_servers:\n  - name: tracker\n    url: http://127.0.0.1:1/mcp\n    oauth: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mcp", "stdio"}, {"mcp", "logout", "tracker"}} {
		code, _, errs := toolctl(t, append([]string{"--nats", s.ClientURL(), "--config", cfg}, append(args, "--kv-replicas", "3")...)...)
		if code != exitError || !strings.Contains(errs, "--kv-replicas") || !strings.Contains(errs, "need a NATS cluster") {
			t.Errorf("%q --kv-replicas 3 on one server: exit %d, want %d saying the replicas need a cluster:\n%s", args, code, exitError, errs)
		}
	}
}
