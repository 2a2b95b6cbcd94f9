package bus_test

import (
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/bustest"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/toolkit"
)

// One behavioural suite, three transports here: the Toolkit in process, and
// the Client over an embedded server reached in process and over TCP (the
// MCP gateway's run is in package mcp).
// Over NATS the worker announces itself (bus.Serve) and keeps its group
// state in the server's KV bucket, where the client's fleet-wide Schemas
// reads it.
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
	var servers sync.Map // *testing.T → *embedded.Server of the test
	return bustest.Config{
		State: func(t *testing.T) toolkit.GroupState {
			s := startServer(t, tcp)
			servers.Store(t, s)
			t.Cleanup(func() { servers.Delete(t) })
			js, err := jetstream.New(connect(t, s))
			if err != nil {
				t.Fatal(err)
			}
			st, err := bus.NewKVState(ctxT(t), js, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		Transport: func(t *testing.T, tk *toolkit.Toolkit) toolkit.Caller {
			v, _ := servers.Load(t)
			s := v.(*embedded.Server)
			serve(t, connect(t, s), tk, nil)
			return newClient(t, connect(t, s), nil)
		},
	}
}
