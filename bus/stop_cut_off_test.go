package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// cutOffGrace is the grace of the stops below: generous, and well under
// the 10s nats.go's drain waits for the server to confirm it (Flush).
const cutOffGrace = 5 * time.Second

// cutOffWorker serves tk on a TCP server on a free port of 127.0.0.1,
// through a connection that reconnects for ever, then shuts the server
// down and returns once the worker's connection is reconnecting: a worker
// cut off from NATS. log holds what the worker logged.
func cutOffWorker(t *testing.T, tk *toolkit.Toolkit, opts bus.WorkerOptions, before func(*server.Server)) (w *bus.Worker, log *natstest.Buffer) {
	t.Helper()
	port := natstest.FreePort(t)
	s := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", port })
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	log = &natstest.Buffer{}
	opts.Logger = slog.New(slog.NewTextHandler(log, nil))
	w = serve(t, nc, tk, &opts)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(s)
	}
	s.Shutdown()
	s.WaitForShutdown()
	natstest.WaitFor(t, "the worker's connection to be lost", func() bool { return nc.Status() == nats.RECONNECTING })
	return w, log
}

// TestStopCutOffNothingToDrain: a worker whose NATS server is gone (its
// client reconnecting) and that runs no call has nothing to drain, but
// its Stop waited for the drains of its subscriptions, which the server
// cannot confirm: nats.go waits its flush timeout (10s) for them, so a
// grace under that ended with "the grace period ended before the
// worker's subscriptions drained; no call was running" (and cmd/worker
// logged "grace period over"). Stop now returns at once, nil, and logs
// that it stopped without draining, not being connected; with a grace
// over from the start (--grace 0) too.
func TestStopCutOffNothingToDrain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration // 0: over when Stop is called
	}{
		{"grace", cutOffGrace},
		{"no grace", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := toolkit.New(nil)
			mustAdd(t, tk, echoTool())
			w, log := cutOffWorker(t, tk, bus.WorkerOptions{}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), tc.grace)
			defer cancel()
			if err := w.Stop(ctx); err != nil {
				t.Fatalf("Stop of a worker cut off from NATS, running no call, with a grace of %v: %v\nlog:\n%s", tc.grace, err, log)
			}
			if !strings.Contains(log.String(), "not connected to NATS: stopped without draining") {
				t.Fatalf("the log does not say the worker stopped without draining, not connected:\n%s", log)
			}
			if strings.Contains(log.String(), "drained") {
				t.Fatalf("the log speaks of a drain:\n%s", log)
			}
		})
	}
}

// TestStopCutOffWaitsForRunningCall: a worker cut off from NATS still
// lets the calls it runs finish within its grace, as a connected one
// does: Stop returns once the running call has ended, nil, and the log
// says it stopped without draining, with the call in flight.
func TestStopCutOffWaitsForRunningCall(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("hold", "Hold until released.", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release
		return "done", nil
	}))
	var finals atomic.Int32
	opts := bus.WorkerOptions{OnFinal: func(string, toolkit.State, toolkit.Code, time.Duration) { finals.Add(1) }}
	w, log := cutOffWorker(t, tk, opts, func(s *server.Server) {
		c := newClient(t, natstest.Conn(t, s), nil)
		go c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold"})
		<-started
	})
	ctx, cancel := context.WithTimeout(context.Background(), cutOffGrace)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(ctx) }()
	natstest.WaitFor(t, "the stop to be under way", w.Draining)
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop of a worker cut off from NATS whose call ended within the grace: %v\nlog:\n%s", err, log)
	}
	if finals.Load() != 1 {
		t.Fatalf("Stop returned before the running call ended (%d finals)", finals.Load())
	}
	if !strings.Contains(log.String(), "not connected to NATS: stopped without draining") || !strings.Contains(log.String(), "in_flight=1") {
		t.Fatalf("the log does not say the worker stopped without draining with a call in flight:\n%s", log)
	}
}
