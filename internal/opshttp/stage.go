package opshttp

import (
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
)

// Stage is the readiness and the NATS connection of a process whose
// endpoint listens before it connects: /readyz answers 503 "not ready:
// WHY" (NotReady) until Serve gives it the process's Ready, and the
// metrics of NATSMetrics say not connected (toolbus_nats_connected 0)
// until Connected gives it the connection. Its methods are safe for
// concurrent use; the zero Stage answers "not ready: starting".
type Stage struct {
	ready atomic.Pointer[Ready]
	nc    atomic.Pointer[nats.Conn]
}

// NotReady makes Ready answer 503 "not ready: why".
func (s *Stage) NotReady(why string) {
	r := Ready(func() (bool, string) { return false, "not ready: " + why })
	s.ready.Store(&r)
}

// Serve makes Ready answer r, once the process serves.
func (s *Stage) Serve(r Ready) { s.ready.Store(&r) }

// Ready is the process's Ready at its stage, for Start.
func (s *Stage) Ready() (bool, string) {
	if r := s.ready.Load(); r != nil {
		return (*r)()
	}
	return false, "not ready: starting"
}

// Connected gives NATSMetrics the process's connection, once made.
func (s *Stage) Connected(nc *nats.Conn) { s.nc.Store(nc) }

// NATSMetrics are NATSMetrics of the connection given to Connected: not
// connected and no reconnects until then.
func (s *Stage) NATSMetrics() []prometheus.Collector {
	return NATSMetrics(func() bool {
		nc := s.nc.Load()
		return nc != nil && nc.IsConnected()
	}, func() uint64 {
		if nc := s.nc.Load(); nc != nil {
			return nc.Stats().Reconnects
		}
		return 0
	})
}
