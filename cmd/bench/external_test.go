package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
)

// A bench worker whose connection was closed for good (the server gone
// longer than its reconnect attempts) stayed up, serving nothing and
// saying nothing, until someone killed it.
func TestWorkerEndsWhenConnectionClosed(t *testing.T) {
	srv := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t) })
	testConnOptions = []nats.Option{nats.NoReconnect()}
	t.Cleanup(func() { testConnOptions = nil })
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- workerMain([]string{"--nats", srv.ClientURL(), "--slots", "1"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("worker said %q (%v), not ready; stderr: %s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	srv.Shutdown()
	select {
	case c := <-code:
		if c != 1 || !strings.Contains(stderr.String(), "lost the NATS server") {
			t.Errorf("exit %d, stderr %q: want 1 and the lost server named", c, stderr.String())
		}
	case <-time.After(guard): // a guard against a hang, not a measurement
		t.Fatal("the worker is still up a long while after its connection closed")
	}
}

// A run against an external server that went away for good went on: the
// calls failed at once on the closed connection, as fast as the callers
// could make them, to the end of every point, and the run ended well.
func TestRunEndsWhenServerLost(t *testing.T) {
	srv := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t) })
	h, err := startHost(natstest.Ctx(t), natstest.Conn(t, srv), hostOptions{slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // its server is gone: no drain to wait for
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		h.stop(ctx)
	})
	testConnOptions = []nats.Option{nats.NoReconnect()}
	t.Cleanup(func() { testConnOptions = nil })
	cfg, err := parseFlags([]string{"--nats", srv.ClientURL(), "-s", "echo", "--systems", "toolbus,raw", "-c", "2", "-d", "20s", "--warmup", "0", "--rounds", "1",
		"--stall", "1s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	pr, pw := io.Pipe()
	type result struct {
		rep *report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := run(ctx, cfg, pw, nil)
		pw.Close()
		done <- result{rep, err}
	}()
	r := bufio.NewReader(pr)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "toolbus bench") {
		t.Fatalf("no header: %q %v", line, err)
	}
	go io.Copy(io.Discard, r)
	srv.Shutdown()
	res := <-done
	if res.err == nil || !strings.Contains(res.err.Error(), "lost the NATS server") {
		t.Errorf("run ended with %v, want the lost server named", res.err)
	}
}

// With --nats and no bench worker started there, the run measured every
// call ending unavailable, at once, and ended well.
func TestExternalServerWithoutWorkers(t *testing.T) {
	srv := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t) })
	cfg, err := parseFlags([]string{"--nats", srv.ClientURL(), "-s", "echo", "--systems", "toolbus", "-c", "1", "-n", "5", "--warmup", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(natstest.Ctx(t), cfg, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "bench worker --nats") {
		t.Errorf("run ended with %v, want it to say a bench worker must be started", err)
	}
}
