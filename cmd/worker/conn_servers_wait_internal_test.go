package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/internal/natstest"
)

// logLines is a slog handler that passes on each record as a line:
// its level, message and attributes.
type logLines chan string

func (l logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l logLines) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
		return true
	})
	select {
	case l <- b.String():
	default:
	}
	return nil
}
func (l logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logLines) WithGroup(string) slog.Handler      { return l }

// TestConnServersWaitsForOthers: with several servers in the list, one
// refusing the worker's credentials or with a certificate the worker
// does not verify ended the connect retries though the others only
// refused the connection (not started yet: a fleet starting), so the
// worker exited where it had only to wait for them. The worker says the
// failure as an error at once, retries while another server is
// unreachable, and connects to it once it is up.
func TestConnServersWaitsForOthers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) string // the failing server's URL
		says  string                    // what its failure says
	}{
		{"credentials", func(t *testing.T) string {
			return natstest.ServerWith(t, func(o *server.Options) {
				o.DontListen, o.Host, o.Port = false, "127.0.0.1", -1
				o.Username, o.Password = "fleet", "rotated"
			}).ClientURL()
		}, "Authorization Violation"},
		{"certificate", func(t *testing.T) string {
			_, url := natstest.TLSServer(t)
			return url
		}, "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) { waitsForOthers(t, tc.start(t), tc.says) })
	}
}

// waitsForOthers checks connect with failing, whose failure says says,
// and a server started after the first retry.
func waitsForOthers(t *testing.T, failing, says string) {
	t.Helper()
	port := natstest.FreePort(t)
	later := fmt.Sprintf("nats://127.0.0.1:%d", port) // not up yet
	cfg := &config.Config{}
	cfg.NATS.URLs = []string{failing, later}
	cfg.NATS.User, cfg.NATS.Password = "fleet", "s3cret"
	said := connSaid{note: func(url string, err error) string {
		return config.ConnNote(cfg.NATS, "", nil, url, "", err)
	}}
	lines := make(logLines, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := connect(ctx, cfg, "test", said, slog.New(lines))
		done <- result{nc, err}
	}()
	guard := time.NewTimer(3 * time.Minute) // over startupWait
	defer guard.Stop()
	var said1 bool // the refusal, said as an error
	for retried := false; !retried; {
		select {
		case l := <-lines:
			if strings.HasPrefix(l, "ERROR ") && strings.Contains(l, failing) && strings.Contains(l, says) {
				said1 = true
			}
			retried = strings.Contains(l, ": retrying")
		case r := <-done:
			if r.nc != nil {
				r.nc.Close()
			}
			t.Fatalf("connect gave up while %s was only not up yet: %v", later, r.err)
		case <-guard.C:
			t.Fatal("no retry and no end of connect within the guard")
		}
	}
	if !said1 {
		t.Errorf("no error line said %q of %s before the retry", says, failing)
	}
	natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", port
		o.Username, o.Password = "fleet", "s3cret"
	})
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("connect failed with %s up: %v", later, r.err)
		}
		url := r.nc.ConnectedUrl()
		r.nc.Close()
		if url != later {
			t.Fatalf("connected to %s, want %s", url, later)
		}
	case <-guard.C:
		t.Fatal("connect did not end within the guard")
	}
}
