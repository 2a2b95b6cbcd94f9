package main

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/toolbus/toolbus/internal/opshttp"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// gatewayMetrics are the MCP gateway's metrics (toolctl mcp serve --http):
// sessions connected, tools/call answered by tool, state and code, their
// duration, and the NATS connection. A tool the fleet does not serve, and
// did not when an earlier call of it was counted, is counted as
// "<unknown>" (no tool's name): MCP clients choose the names they call,
// and labels stay bounded.
type gatewayMetrics struct {
	reg   *prometheus.Registry
	g     *mcp.Gateway  // set by serve, before the gateway serves
	stage opshttp.Stage // what /readyz answers, the connection once made
	calls *prometheus.CounterVec
	dur   *prometheus.HistogramVec
	tools *opshttp.ToolLabels // the tool labels, bounded

	// draining is set once the gateway stops: /readyz answers 503 from
	// then on, as a draining worker's does.
	draining atomic.Bool
}

// unknownTool labels the calls of tools the fleet does not serve.
const unknownTool = opshttp.UnknownTool

func newGatewayMetrics() *gatewayMetrics {
	m := &gatewayMetrics{reg: prometheus.NewRegistry(), tools: opshttp.NewToolLabels(opshttp.MaxToolLabels)}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolbus_gateway_calls_total",
		Help: "tools/call requests the MCP gateway answered, by tool (" + unknownTool + " for names the fleet does not serve, " + opshttp.OtherTool + " past 20,000 names) and how they ended.",
	}, []string{"tool", "state", "code"})
	m.dur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toolbus_gateway_call_duration_seconds",
		Help:    "Time from a tools/call request to its answer, by tool.",
		Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 30, 120},
	}, []string{"tool"})
	m.reg.MustRegister(m.calls, m.dur, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Not connected (0) until the gateway's connection is made.
	m.reg.MustRegister(m.stage.NATSMetrics()...)
	return m
}

func (m *gatewayMetrics) onCall(tool string, state toolkit.State, code toolkit.Code, took time.Duration) {
	if tool != toolkit.MetaToolName {
		if g := m.g; g == nil {
			tool = unknownTool
		} else if _, ok := g.Fleet().ToolInfo(tool); !ok && !m.tools.Labelled(tool) {
			tool = unknownTool
		} else {
			// The fleet's tools change, labels stay: a call answered after
			// its tool left the fleet (its worker lost) keeps the label.
			tool = m.tools.Label(tool)
		}
	}
	m.calls.WithLabelValues(tool, string(state), string(code)).Inc()
	m.dur.WithLabelValues(tool).Observe(took.Seconds())
}

// listen starts the endpoint on addr, before the gateway connects to
// NATS: /readyz answers not ready (m.stage) until serve.
func (m *gatewayMetrics) listen(addr string, log *slog.Logger) (*opshttp.Endpoint, error) {
	ep, err := opshttp.Start(addr, m.reg, m.stage.Ready, log)
	if err != nil {
		return nil, err
	}
	log.Info("operator endpoint", "http", ep.Addr)
	return ep, nil
}

// serve adds the running gateway's metrics to the endpoint and makes
// /readyz answer for it.
func (m *gatewayMetrics) serve(nc *nats.Conn, g *mcp.Gateway) {
	m.g = g
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolbus_gateway_sessions", Help: "MCP sessions connected to the gateway."},
		func() float64 { return float64(g.Sessions()) }))
	natsReady := opshttp.NATSReady(nc)
	m.stage.Serve(func() (bool, string) {
		if m.draining.Load() {
			return false, "not ready: " + drainingWhy
		}
		if ok, why := natsReady(); !ok {
			return false, why
		}
		return true, "ready"
	})
}

// drainingWhy is why /readyz answers 503 once the gateway stops.
const drainingWhy = "draining (stopping; no new requests)"

// drain makes /readyz answer 503 saying so, at once and from then on,
// whatever stage the gateway is at (nil m: nothing).
func (m *gatewayMetrics) drain() {
	if m == nil {
		return
	}
	m.draining.Store(true)
	m.stage.NotReady(drainingWhy)
}
