package bus_test

import (
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/bustest"
	"github.com/toolbus/toolbus/toolkit"
)

// One behavioural suite, three transports: the Toolkit in process, and the
// RemoteToolkit over an embedded server reached in process and over TCP.
func TestTransportSuite(t *testing.T) {
	transports := []struct {
		name      string
		transport bustest.Transport
	}{
		{"local", func(t *testing.T, tk *toolkit.Toolkit) bus.Caller { return tk }},
		{"nats-inprocess", remote(false)},
		{"nats-tcp", remote(true)},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { bustest.Run(t, tr.transport) })
	}
}

func remote(tcp bool) bustest.Transport {
	return func(t *testing.T, tk *toolkit.Toolkit) bus.Caller {
		s := startServer(t, tcp)
		serve(t, connect(t, s), tk, nil)
		return bus.NewRemoteToolkit(newClient(t, connect(t, s), nil))
	}
}
