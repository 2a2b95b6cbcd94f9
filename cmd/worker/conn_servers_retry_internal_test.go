package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/config"
)

// retryLines is a slog handler that passes on each message saying a
// retry.
type retryLines chan string

func (r retryLines) Enabled(context.Context, slog.Level) bool { return true }
func (r retryLines) Handle(_ context.Context, rec slog.Record) error {
	if strings.HasSuffix(rec.Message, ": retrying") {
		var err string
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				err = a.Value.String()
			}
			return true
		})
		select {
		case r <- err:
		default:
		}
	}
	return nil
}
func (r retryLines) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r retryLines) WithGroup(string) slog.Handler      { return r }

// TestConnServersTLSRefusedRetried: with several tls:// servers in the
// list, none of them up yet (a cluster starting), each refused the
// connection, and the worker gave up at once instead of retrying: its
// test for a TLS failure looked for "tls:" in the whole error, which
// names each server by its URL, "tls://...". Refused connections are
// retried, whatever the URLs' scheme.
func TestConnServersTLSRefusedRetried(t *testing.T) {
	var urls []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "tls://"+l.Addr().String())
		l.Close() // nothing answers there
	}
	cfg := &config.Config{}
	cfg.NATS.URLs = urls
	said := connSaid{note: func(url string, err error) string {
		return config.ConnNote(cfg.NATS, "", nil, url, "", err)
	}}
	lines := make(retryLines, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		nc, err := connect(ctx, cfg, "test", said, slog.New(lines))
		if nc != nil {
			nc.Close()
		}
		done <- result{err}
	}()
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	select {
	case err := <-lines:
		if !strings.Contains(err, "connection refused") {
			t.Errorf("the retry says %q, want each server's refused connection", err)
		}
		cancel()
		<-done
	case r := <-done:
		t.Fatalf("connect gave up without retrying servers that refused the connection: %v", r.err)
	case <-guard.C:
		t.Fatal("no retry and no end of connect within the guard")
	}
}
