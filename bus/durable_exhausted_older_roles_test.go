package bus_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// olderRolesServer starts a server with the roles of toolctl auth init
// (a caller alice) as written before the exhausted stream: the worker
// may neither bind it nor take from it, and the server tells only the
// connection's error handler so. It returns a function connecting with
// a role's key.
func olderRolesServer(t *testing.T) func(seed string) *nats.Conn {
	t.Helper()
	return rolesWithout(t, wire.StreamExhausted)
}

// rolesWithout starts a server with the roles of toolctl auth init (a
// caller alice) without the permissions naming stream, as roles written
// before it; it returns a function connecting with a role's key.
func rolesWithout(t *testing.T, stream string) func(seed string) *nats.Conn {
	t.Helper()
	dir := t.TempDir()
	setup, err := auth.Init(dir, []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	fo, err := server.ProcessConfigFile(setup.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range fo.Nkeys {
		if p := u.Permissions; p != nil && p.Publish != nil {
			p.Publish.Allow = slices.DeleteFunc(p.Publish.Allow, func(s string) bool { return strings.Contains(s, stream) })
		}
	}
	s := natstest.ServerWith(t, func(o *server.Options) { o.Nkeys, o.Users, o.Accounts = fo.Nkeys, fo.Users, fo.Accounts })
	return func(seed string) *nats.Conn {
		t.Helper()
		opt, err := nats.NkeyOptionFromSeed(filepath.Join(dir, seed))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect("", nats.InProcessServer(s), opt, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
}

// TestDurableExhaustedOlderRolesServesMeanwhile: a worker whose roles
// predate the exhausted stream waits out the bind of it (5 s) before it
// listens to the advisories on core NATS instead. Serve waited for that
// before it subscribed to calls, so such a worker took no call for its
// first 5 s. The stream is bound in the background: the worker serves at
// once, falls back as before, and a stop, during the bind or after the
// fallback, leaves its connection as it found it.
func TestDurableExhaustedOlderRolesServesMeanwhile(t *testing.T) {
	conn := olderRolesServer(t)
	const fallback = "without the exhausted stream"
	// The subscriptions on a worker's connection before it serves: the
	// one nats.go answers requests on, made by a first request.
	base := map[*nats.Conn]int{}
	start := func(instance string) (*bus.Worker, *nats.Conn, *natstest.Buffer) {
		nc := conn(auth.SeedFile(auth.RoleWorker, ""))
		js := natstest.JS(t, nc)
		if _, err := js.AccountInfo(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		base[nc] = nc.NumSubscriptions()
		var log natstest.Buffer
		tk := toolkit.New(nil)
		mustAdd(t, tk, echoTool())
		w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: instance, AnnounceInterval: -1,
			Logger: slog.New(slog.NewTextHandler(&log, nil)), Durable: &bus.DurableOptions{JetStream: js}})
		if err != nil {
			t.Fatal(err)
		}
		return w, nc, &log
	}
	stop := func(w *bus.Worker, nc *nats.Conn) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("stopping %s: %v", w.Instance(), err)
		}
		if n := nc.NumSubscriptions() - base[nc]; n != 0 {
			t.Errorf("%s stopped left %d subscriptions on its connection", w.Instance(), n)
		}
	}
	c := newClient(t, conn(auth.SeedFile(auth.RoleCaller, "alice")), &bus.ClientOptions{Identity: "alice"})

	w, nc, log := start("w1")
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "meanwhile"}})
	if r.Text() != "meanwhile" {
		t.Fatalf("a call to a worker of older roles as it starts: %s %s", r.Code, r.Text())
	}
	if strings.Contains(log.String(), fallback) {
		t.Fatalf("the worker of older roles served its first call only once it gave up the exhausted stream:\n%s", log)
	}
	natstest.WaitFor(t, "the fallback to the advisories on core NATS", func() bool { return strings.Contains(log.String(), fallback) })
	stop(w, nc)

	// Stopped while it binds the exhausted stream: the bind ends with the
	// stop.
	w, nc, _ = start("w2")
	stop(w, nc)
}
