package main

import (
	"bytes"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayReconnectsForever: the MCP gateway (mcp serve, mcp stdio)
// runs for as long as a worker does and must outlive a NATS outage as a
// worker does. It connected with nats.go's defaults, giving up after 60
// reconnection attempts (about two minutes): a longer outage (a cluster
// restarted, a network partition) left it running with a closed
// connection, every tools/call failing, until someone restarted it.
// One-shot commands keep the defaults.
func TestGatewayReconnectsForever(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", -1 })
	cfg := &config.Config{NATS: config.NATS{URLs: []string{s.ClientURL()}}}
	gw := &env{stderr: &bytes.Buffer{}, cfg: cfg, serving: true}
	nc, err := gw.conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if n := nc.Opts.MaxReconnect; n >= 0 {
		t.Errorf("the gateway's connection gives up after %d reconnection attempts", n)
	}
	once := &env{stderr: &bytes.Buffer{}, cfg: cfg}
	nc2, err := once.conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	if n := nc2.Opts.MaxReconnect; n < 0 {
		t.Errorf("a one-shot command reconnects forever")
	}
}
