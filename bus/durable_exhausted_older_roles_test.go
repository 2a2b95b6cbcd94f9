package bus_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	servesMeanwhile(t, wire.StreamExhausted, "without the exhausted stream", false)
}

// TestDurableCancelsOlderRolesServesMeanwhile: the same for the cancels
// stream, whose bind Serve waited for too, so that such a worker took no
// call at all, core or durable, for its first 5 s.
func TestDurableCancelsOlderRolesServesMeanwhile(t *testing.T) {
	servesMeanwhile(t, wire.StreamCancels, "without the cancels stream", true)
}

// servesMeanwhile checks that a worker whose roles lack stream serves
// while it binds stream (held under way: SetBindWait), goes on without
// it once the bind gives up (saying gaveUp in its log), and leaves its
// connection as it found it when stopped during the bind or after.
func servesMeanwhile(t *testing.T, stream, gaveUp string, durable bool) {
	conn := rolesWithout(t, stream)
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
	call := func(text string) {
		t.Helper()
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": text}, Durable: durable})
		if r.Text() != text {
			t.Fatalf("a call (%s) to a worker of older roles: %s %s", text, r.Code, r.Text())
		}
	}

	// The bind held under way for longer than the test looks: Serve
	// waited for it, the call would wait for Serve.
	bus.SetBindWait(t, 2*guard)
	w, nc, log := start("w1")
	call("meanwhile")
	if strings.Contains(log.String(), gaveUp) {
		t.Fatalf("the worker of older roles gave %s up before it served:\n%s", stream, log)
	}
	stop(w, nc) // during the bind: it ends with the stop, nothing left

	// The bind giving up at once: the worker goes on without the stream.
	bus.SetBindWait(t, 50*time.Millisecond)
	w, nc, log = start("w2")
	natstest.WaitFor(t, "the worker going on without "+stream, func() bool { return strings.Contains(log.String(), gaveUp) })
	call("after")
	stop(w, nc)
}
