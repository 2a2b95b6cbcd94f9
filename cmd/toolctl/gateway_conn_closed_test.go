package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayExitsWhenConnectionClosed: the server revokes the gateway's
// user (a reloaded configuration without it), so nats.go closes the
// gateway's connection for good (the same authorization violation twice:
// it stops reconnecting). The gateway can relay nothing more, so it must
// say so and exit 1, for its supervisor to start it again, as a worker
// does. It lived on instead, listening, every tools/call failing, its
// /healthz answering "ok" for ever.
func TestGatewayExitsWhenConnectionClosed(t *testing.T) {
	var opts *server.Options
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", -1
		o.Users = []*server.User{{Username: "gw", Password: "secret"}}
		opts = o
	})
	url := fmt.Sprintf("nats://gw:secret@127.0.0.1:%d", s.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	var stderr natstest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--nats", url, "mcp", "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &stderr)
	}()
	defer func() { cancel(); <-done }()
	natstest.WaitFor(t, "the gateway to listen", func() bool { return strings.Contains(stderr.String(), "MCP gateway listening") })

	revoked := *opts
	revoked.Users = []*server.User{{Username: "other", Password: "secret"}}
	if err := s.ReloadOptions(&revoked); err != nil {
		t.Fatal(err)
	}
	var code int
	defer func() {
		if t.Failed() {
			t.Log(stderr.String())
		}
	}()
	natstest.WaitFor(t, "the gateway to exit", func() bool {
		select {
		case code = <-done:
			done <- code
			return true
		default:
			return false
		}
	})
	if code != exitError {
		t.Errorf("gateway exit %d after its connection closed, want %d\n%s", code, exitError, stderr.String())
	}
	if !strings.Contains(stderr.String(), "NATS connection closed") {
		t.Errorf("the gateway did not say its connection closed:\n%s", stderr.String())
	}
}
