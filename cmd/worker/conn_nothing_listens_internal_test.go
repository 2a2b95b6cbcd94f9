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

// TestConnNothingListensSaysWhatToDo: a worker given a URL where no NATS
// server listens retried for two minutes, each line and the error that
// ended them saying nats.go's "no servers available for connection"
// alone: not where the URL came from, nor that without --nats the worker
// starts a server of its own. Each retry line, and so that error, now
// says both.
func TestConnNothingListensSaysWhatToDo(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "nats://" + l.Addr().String()
	}
	one, two := closed(), closed()
	const todo = ": start the NATS server first, or give the address of one with --nats, NATS_URL or nats.urls; with none of them the worker starts an embedded server of its own"
	for _, tt := range []struct {
		name, from string
		urls       []string
		want       string
	}{
		{"one server", "flag --nats", []string{one}, "no NATS server listens there; the URL came from flag --nats" + todo},
		{"several", "env NATS_URL", []string{one, two}, "no NATS server listens at any of them; the URLs came from env NATS_URL" + todo},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{}
			cfg.NATS.URLs = tt.urls
			said := connSaid{
				note: func(url string, err error) string { return config.ConnNote(cfg.NATS, "", nil, url, "", err) },
				from: tt.from,
			}
			lines := make(retryLines, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				nc, err := connect(ctx, cfg, "test", said, slog.New(lines))
				if nc != nil {
					nc.Close()
				}
				done <- err
			}()
			guard := time.NewTimer(time.Minute)
			defer guard.Stop()
			select {
			case line := <-lines:
				if !strings.Contains(line, tt.want) {
					t.Errorf("the retry says %q, want %q", line, tt.want)
				}
				cancel()
				<-done
			case err := <-done:
				t.Fatalf("connect ended without retrying: %v", err)
			case <-guard.C:
				t.Fatal("no retry and no end of connect within the guard")
			}
		})
	}
}
