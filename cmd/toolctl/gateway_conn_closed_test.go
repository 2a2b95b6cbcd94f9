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
// user (it comes back without it), so nats.go closes the
// gateway's connection for good (the same authorization violation twice:
// it stops reconnecting). The gateway can relay nothing more, so it must
// say so and exit 1, for its supervisor to start it again, as a worker
// does. It lived on instead, listening, every tools/call failing, its
// /healthz answering "ok" for ever.
func TestGatewayExitsWhenConnectionClosed(t *testing.T) {
	for _, mode := range [][]string{{"serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, {"stdio"}} {
		t.Run(mode[0], func(t *testing.T) { gatewayConnClosed(t, mode) })
	}
}

func gatewayConnClosed(t *testing.T, mode []string) {
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", -1
		o.Users = []*server.User{{Username: "gw", Password: "secret"}}
	})
	url := fmt.Sprintf("nats://gw:secret@127.0.0.1:%d", s.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	var stdout, stderr natstest.Buffer
	stdin, stdinW := io.Pipe() // mcp stdio reads on: no EOF
	defer stdinW.Close()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--nats", url, "mcp"}, mode...), stdin, &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	if mode[0] == "stdio" {
		go stdinW.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}` + "\n"))
	}
	natstest.WaitFor(t, "the gateway to start", func() bool {
		if mode[0] == "serve" {
			return strings.Contains(stderr.String(), "MCP gateway listening")
		}
		return strings.Contains(stdout.String(), `"id":1`)
	})

	// The server comes back on its port without the gateway's user (a
	// restart rather than a reload of its options: a reload races with
	// the server's own reads of them under -race).
	port := s.Addr().(*net.TCPAddr).Port
	s.Shutdown()
	s.WaitForShutdown()
	natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", port
		o.Users = []*server.User{{Username: "other", Password: "secret"}}
	})
	defer func() {
		if t.Failed() {
			t.Log(stderr.String())
		}
	}()
	var code int
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
		t.Errorf("gateway exit %d after its connection closed, want %d", code, exitError)
	}
	if !strings.Contains(stderr.String(), "NATS connection closed") {
		t.Errorf("the gateway did not say its connection closed")
	}
}
