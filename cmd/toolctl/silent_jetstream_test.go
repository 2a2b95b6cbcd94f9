package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
)

// A server whose JetStream API takes requests and never answers them (a
// cluster without a leader for the moment, a stalled node) must not hold
// the one-shot commands forever: the KV reads they make retry until
// their context ends, and toolctl's had no end.
func TestOneShotCommandsEndWhenJetStreamIsSilent(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port, o.JetStream = false, "127.0.0.1", -1, false
	})
	nc := natstest.Conn(t, s)
	if _, err := nc.Subscribe("$JS.API.>", func(*nats.Msg) {}); err != nil { // takes, never answers
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { opTimeout = d }(opTimeout)
	opTimeout = 2 * time.Second
	for _, args := range [][]string{
		{"mode", "--session", "s1"},
		{"sessions"},
		{"result", "c1"},
		{"state", "export", "--session", "s1"},
		{"pending"},
	} {
		type result struct {
			code     int
			out, err string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errs := toolctl(t, append([]string{"--nats", s.ClientURL()}, args...)...)
			done <- result{code, out, errs}
		}()
		select {
		case r := <-done:
			if r.code == exitOK || !strings.Contains(r.err, "NATS did not answer within") {
				t.Errorf("toolctl %s: exit %d, stdout %q, stderr %q; want a failure saying NATS did not answer", strings.Join(args, " "), r.code, r.out, r.err)
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("toolctl %s: still waiting after 90s on a JetStream that never answers", strings.Join(args, " "))
		}
	}
}
