package bus_test

import (
	"testing"

	"github.com/toolbus/toolbus/bus/bustest"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// One behavioural suite, three transports here: the Toolkit in process, and
// the Client over an embedded server reached in process and over TCP (the
// MCP gateway's run is in package mcp).
// Over NATS the worker announces itself (bus.Serve) and keeps its group
// state in the server's KV bucket, where Client.SessionSchemas reads it.
func TestTransportSuite(t *testing.T) {
	transports := []struct {
		name string
		cfg  bustest.Config
	}{
		{"local", bustest.Config{Transport: func(t *testing.T, tk *toolkit.Toolkit) toolkit.Caller { return tk }}},
		{"nats-inprocess", remote(false)},
		{"nats-tcp", remote(true)},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { bustest.RunConfig(t, tr.cfg) })
	}
}

func remote(tcp bool) bustest.Config {
	return bustest.OverNATS(tcp, func(t *testing.T, s *embedded.Server, tk *toolkit.Toolkit) toolkit.Caller {
		serve(t, natstest.Connect(t, s), tk, nil)
		return newClient(t, natstest.Connect(t, s), nil)
	})
}
