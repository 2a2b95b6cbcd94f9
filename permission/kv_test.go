package permission

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/toolkit"
)

// startNATS starts an embedded JetStream server with its store in dir (no
// listener: clients connect in process) and stops it when the test ends.
func startNATS(t testing.TB, dir string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		ServerName: "perm-test", DontListen: true, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// connect opens a client connection (one per simulated process), closed
// before the server stops.
func connect(t testing.TB, s *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func kvStore(t *testing.T, js jetstream.JetStream, cfg *KVConfig) *KVStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := NewKVStore(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestKVStore(t *testing.T) {
	s := startNATS(t, t.TempDir())
	_, js := connect(t, s)
	var n atomic.Int64
	storeSuite(t, func(t *testing.T) Store {
		i := n.Add(1)
		return kvStore(t, js, &KVConfig{Bucket: fmt.Sprintf("pol_%d", i), ApprovalsBucket: fmt.Sprintf("appr_%d", i)})
	})
}

func TestKVStoreConfigErrors(t *testing.T) {
	s := startNATS(t, t.TempDir())
	_, js := connect(t, s)
	ctx := context.Background()
	for _, cfg := range []*KVConfig{
		{Bucket: "same", ApprovalsBucket: "same"},
		{ApprovalTTL: -time.Second},
		{Bucket: "bad name"},
	} {
		if _, err := NewKVStore(ctx, js, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	// Opening the same buckets again (another worker starting) works.
	kvStore(t, js, nil)
	kvStore(t, js, nil)
}

// The whole approval flow across processes: worker A answers
// approval_required, an operator approves through a third connection, and
// the re-sent call runs on worker B. The approval is consumed, so A asks
// again; and it survives a server restart.
func TestKVApprovalAcrossWorkersAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := startNATS(t, dir)
	_, jsA := connect(t, s)
	_, jsB := connect(t, s)
	_, jsC := connect(t, s)
	a := newWorker(t, kvStore(t, jsA, nil), nil)
	b := newWorker(t, kvStore(t, jsB, nil), nil)
	ctl, err := NewGuard(kvStore(t, jsC, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := map[string]any{"env": "prod"}

	wantResp(t, a.call(t, "sess", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	ap, err := ctl.Approve(ctx, "", "c1", "alice")
	if err != nil || ap.Session != "sess" || ap.Tool != "deploy" {
		t.Fatalf("approve: %+v %v", ap, err)
	}
	wantResp(t, b.call(t, "sess", "c1", "deploy", map[string]any{"env": "staging"}), toolkit.StateDenied, toolkit.CodeDenied, "ApprovalMismatchError")
	wantResp(t, b.call(t, "sess", "c1", "deploy", in), toolkit.StateSuccess, "", "deployed to prod")
	wantResp(t, a.call(t, "sess", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	if a.deploys.Load() != 0 || b.deploys.Load() != 1 {
		t.Fatalf("deploys: A %d, B %d", a.deploys.Load(), b.deploys.Load())
	}

	// A rule added by the operator is seen by every worker.
	if err := ctl.Allow(ctx, "ruled", "deploy"); err != nil {
		t.Fatal(err)
	}
	wantResp(t, a.call(t, "ruled", "r1", "deploy", in), toolkit.StateSuccess, "", "deployed")
	wantResp(t, b.call(t, "ruled", "r2", "deploy", in), toolkit.StateSuccess, "", "deployed")
	if err := ctl.SetMode(ctx, "explorer", ModeExplore); err != nil {
		t.Fatal(err)
	}
	wantResp(t, b.call(t, "explorer", "e1", "deploy", in), toolkit.StateDenied, toolkit.CodeDenied, "explore")

	// Key-unsafe session and call ids work end to end.
	wantResp(t, a.call(t, "user@example.com/1", "call 7.x", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	if _, err := ctl.Approve(ctx, "", "call 7.x", "bob"); err != nil {
		t.Fatal(err)
	}
	wantResp(t, b.call(t, "user@example.com/1", "call 7.x", "deploy", in), toolkit.StateSuccess, "", "deployed")

	// An approval made before a restart is honoured after it.
	wantResp(t, a.call(t, "sess", "c2", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	if _, err := ctl.Approve(ctx, "sess", "c2", "alice"); err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	s.WaitForShutdown()

	s2 := startNATS(t, dir)
	_, js2 := connect(t, s2)
	c := newWorker(t, kvStore(t, js2, nil), nil)
	wantResp(t, c.call(t, "sess", "c2", "deploy", in), toolkit.StateSuccess, "", "deployed to prod")
	wantResp(t, c.call(t, "ruled", "r3", "deploy", in), toolkit.StateSuccess, "", "deployed")
	wantResp(t, c.call(t, "sess", "c2", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
}

// A store that cannot be reached fails closed: nothing runs unchecked.
func TestKVUnavailableFailsClosed(t *testing.T) {
	s := startNATS(t, t.TempDir())
	nc, js := connect(t, s)
	w := newWorker(t, kvStore(t, js, nil), nil)
	nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := w.tk.Invoke(ctx, toolkit.ToolCall{ID: "x", Name: "lookup", Session: "s", Input: map[string]any{"key": "k"}})
	wantResp(t, r, toolkit.StateError, toolkit.CodeUnavailable, "PermissionStateError")
	if _, err := w.g.Approve(ctx, "", "x", "a"); err == nil {
		t.Fatal("approve on a closed connection succeeded")
	}
}
