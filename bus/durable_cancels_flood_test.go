package bus_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// fleetRoles starts a server with the roles of toolctl auth init for
// callers, as the fleet runs it, and returns a function connecting as a
// worker (identity "") or as a caller, with the inbox prefix its role
// allows.
func fleetRoles(t *testing.T, adjust func(*server.Options), callers ...string) func(identity string) *nats.Conn {
	t.Helper()
	dir := t.TempDir()
	setup, err := auth.Init(dir, callers)
	if err != nil {
		t.Fatal(err)
	}
	fo, err := server.ProcessConfigFile(setup.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.Nkeys, o.Users, o.Accounts = fo.Nkeys, fo.Users, fo.Accounts
		if adjust != nil {
			adjust(o)
		}
	})
	return func(identity string) *nats.Conn {
		t.Helper()
		seed := auth.SeedFile(auth.RoleWorker, "")
		opts := []nats.Option{nats.InProcessServer(s), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}
		if identity != "" {
			seed = auth.SeedFile(auth.RoleCaller, identity)
			opts = append(opts, nats.CustomInboxPrefix(strings.TrimSuffix(wire.Inbox(identity), ".")))
		}
		opt, err := nats.NkeyOptionFromSeed(filepath.Join(dir, seed))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect("", append(opts, opt)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
}

// effectKit is a toolkit whose tool "effect" counts its runs.
func effectKit(t *testing.T, ran *atomic.Int32) *toolkit.Toolkit {
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("effect", "Has an effect.", func(ctx context.Context, in struct{}) (string, error) {
		ran.Add(1)
		return "done", nil
	}))
	return tk
}

// startRolesWorker starts a durable worker on a worker's connection, its
// finals kept.
func startRolesWorker(t *testing.T, nc *nats.Conn, tk *toolkit.Toolkit, instance string) *bus.Worker {
	t.Helper()
	js := natstest.JS(t, nc)
	return serve(t, nc, tk, &bus.WorkerOptions{Instance: instance, AnnounceInterval: -1,
		Durable: &bus.DurableOptions{JetStream: js}, Results: &bus.ResultsOptions{JetStream: js}})
}

// TestDurableCancelsFloodKeepsOthers: the cancels stream is shared by
// every caller, and it dropped its oldest records when full. A caller
// publishing records of its own under its own identity (large ones, or
// many) pushed out another caller's record of a call cancelled while it
// was queued, and the worker that took that call later ran it. The
// stream now refuses a new record when full (stored ones stay their
// 24 h) and a record larger than a cancel, and a caller whose record is
// refused is told: Client.Cancel returns the refusal.
func TestDurableCancelsFloodKeepsOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// made, when set, makes the cancels stream before any worker (an
		// operator's bounds) from CancelsStreamConfig.
		made  func(*jetstream.StreamConfig)
		flood func(t *testing.T, nc *nats.Conn)
		// full: the flood fills the stream, and a new record is refused.
		full bool
	}{
		{name: "large records", flood: func(t *testing.T, nc *nats.Conn) {
			body := make([]byte, nc.MaxPayload()-1024)
			for i := range int(bus.CancelsStreamConfig(1).MaxBytes)/len(body) + 8 {
				if err := nc.Publish(wire.CancelledSubject("alice", fmt.Sprint("flood-", i)), body); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "many records", made: func(c *jetstream.StreamConfig) { c.MaxMsgs = 16 }, full: true, flood: func(t *testing.T, nc *nats.Conn) {
			m := nats.NewMsg("")
			m.Header.Set(wire.HeaderVersion, "1")
			for i := range 64 {
				m.Subject = wire.CancelledSubject("alice", fmt.Sprint("flood-", i))
				if err := nc.PublishMsg(m); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := fleetRoles(t, nil, "alice", "bob")
			if tc.made != nil {
				cfg := bus.CancelsStreamConfig(1)
				tc.made(&cfg)
				if _, err := natstest.JS(t, conn("")).CreateStream(ctxT(t), cfg); err != nil {
					t.Fatal(err)
				}
			}
			var ran atomic.Int32
			// A worker made the streams and left: bob's call waits.
			w := startRolesWorker(t, conn(""), effectKit(t, &ran), "w0")
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			w.Stop(ctx)

			bob := newClient(t, conn("bob"), &bus.ClientOptions{Identity: "bob", CancelGrace: 100 * time.Millisecond})
			cctx, ccancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, ccancel)
			if r := bob.Invoke(cctx, toolkit.ToolCall{ID: "bob-1", Name: "effect", Durable: true}); r.Code != toolkit.CodeInterrupted {
				t.Fatalf("bob's call cancelled while queued: %+v", r)
			}
			js := natstest.JS(t, conn(""))
			recorded := func() error {
				st, err := js.Stream(ctxT(t), wire.StreamCancels)
				if err == nil {
					_, err = st.GetLastMsgForSubject(ctxT(t), wire.CancelledSubject("bob", "bob-1"))
				}
				return err
			}
			natstest.WaitFor(t, "bob's cancel recorded", func() bool { return recorded() == nil })

			alice := conn("alice")
			tc.flood(t, alice)
			if err := alice.FlushTimeout(guard); err != nil {
				t.Fatal(err)
			}
			if tc.full {
				natstest.WaitFor(t, "the cancels stream full", func() bool {
					st, err := js.Stream(ctxT(t), wire.StreamCancels)
					return err == nil && st.CachedInfo().State.Msgs == 16
				})
				err := bob.Cancel("bob-2")
				if err == nil || !strings.Contains(err.Error(), "not recorded") {
					t.Errorf("a cancel whose record the full stream refused: %v, want its caller told", err)
				}
			}
			if err := recorded(); err != nil {
				t.Errorf("bob's record after alice's flood: %v", err)
			}

			startRolesWorker(t, conn(""), effectKit(t, &ran), "w1")
			natstest.WaitFor(t, "bob's kept final", func() bool { return bob.Result(ctxT(t), "bob-1").Code != toolkit.CodeNotFound })
			if r := bob.Result(ctxT(t), "bob-1"); r.Code != toolkit.CodeInterrupted {
				t.Errorf("bob's call cancelled while queued, taken after alice's flood: %s %s", r.Code, r.Text())
			}
			if n := ran.Load(); n != 0 {
				t.Errorf("the tool ran %d times, want none", n)
			}
		})
	}
}
