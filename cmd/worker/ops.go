package main

import (
	"fmt"
	"io"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/opshttp"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// ops is the worker's operator endpoint (--http): Prometheus metrics on
// /metrics, liveness on /healthz and readiness on /readyz (200 "ready",
// or "ready, degraded: …" while a mounted MCP server is down or JetStream,
// where it keeps state, does not answer; 503 while cut off from NATS or
// draining). It listens before the worker does anything else, so an
// address in use stops the worker before it connects to NATS, and while
// the worker starts (waiting for its NATS server, up to startupWait)
// /healthz answers "ok" and /readyz 503 with what the start is at
// ("not ready: connecting to NATS at URL", "not ready: starting");
// /metrics serves the metrics that exist by then: the Go and process
// collectors and toolbus_nats_connected (0), the worker's once it serves.
// A worker running max_in_flight calls stays ready: NATS's
// queue group, not a load balancer reading /readyz, spreads calls, and
// one answered overloaded (toolbus_worker_overloaded_total) is retried
// by its caller; unready, a saturated fleet's pods would be restarted
// or taken out of rotation for being busy. Metric names
// follow Prometheus conventions (toolbus_… , _total, _seconds); labels
// are bounded: tool names (the ones the worker served at some moment, at
// most 20,000 names over its life, then <other>; <unknown> for any other,
// labels no tool can have),
// states and codes, never call or session ids.
type ops struct {
	tk    *toolkit.Toolkit // set by watch, before the worker serves
	reg   *prometheus.Registry
	calls *prometheus.CounterVec
	dur   *prometheus.HistogramVec
	ep    *opshttp.Endpoint
	addr  string
	tools *opshttp.ToolLabels // the tool labels, bounded
	// timeouts counts the calls the worker's middleware.timeouts ended,
	// which toolbus_worker_cancelled_calls_total adds to the bus's count
	// of the calls a cancel or the caller's deadline ended.
	timeouts atomic.Uint64
	stage    opshttp.Stage // what /readyz answers now, the connection once made
}

// unknownTool labels the finals of calls to tools the worker does not
// serve.
const unknownTool = opshttp.UnknownTool

func newOps() *ops {
	o := &ops{reg: prometheus.NewRegistry(), tools: opshttp.NewToolLabels(opshttp.MaxToolLabels)}
	o.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolbus_worker_calls_total",
		Help: "Calls the worker answered, by tool and how they ended (state and code; code is empty on success), refused ones included.",
	}, []string{"tool", "state", "code"})
	o.dur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toolbus_worker_call_duration_seconds",
		Help:    "Time from taking a call to its final, by tool (calls that ran).",
		Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30, 120},
	}, []string{"tool"})
	o.reg.MustRegister(o.calls, o.dur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Not connected (0) until the worker's connection is made.
	o.reg.MustRegister(o.stage.NATSMetrics()...)
	return o
}

// listen starts the endpoint on addr, answering /readyz not ready until
// serve; nil o (no --http) does nothing.
func (o *ops) listen(addr string, log *slog.Logger) error {
	if o == nil {
		return nil
	}
	e, err := opshttp.Start(addr, o.reg, o.stage.Ready, log)
	if err != nil {
		return err
	}
	o.ep, o.addr = e, e.Addr
	log.Info("operator endpoint listening; not ready until the worker serves", "http", o.addr)
	return nil
}

// notReady makes /readyz answer 503 "not ready: why" (nil o: nothing).
func (o *ops) notReady(why string) {
	if o == nil {
		return
	}
	o.stage.NotReady(why)
}

// connected gives the endpoint the worker's connection, for
// toolbus_nats_connected and toolbus_nats_reconnects_total (nil o:
// nothing).
func (o *ops) connected(nc *nats.Conn) {
	if o != nil {
		o.stage.Connected(nc)
	}
}

// watch labels the tools of tk, before the worker serves it.
func (o *ops) watch(tk *toolkit.Toolkit) {
	o.tk = tk
	// Every tool served gets its label when it is added: its calls that
	// end after it was removed (on their way, or running) keep it.
	label := func() {
		for _, t := range tk.Tools() {
			o.tools.Label(t.Name)
		}
	}
	label()
	tk.OnChange(label)
}

// onFinal counts every final the worker sends (bus.WorkerOptions.OnFinal),
// calls refused at once included, and times the calls that ran.
func (o *ops) onFinal(tool string, state toolkit.State, code toolkit.Code, took time.Duration) {
	if _, ok := o.tk.Get(tool); !ok && tool != toolkit.MetaToolName && !o.tools.Labelled(tool) {
		tool = unknownTool // a name a caller made up (a pinned subject takes any): labels stay bounded
	} else {
		tool = o.tools.Label(tool) // an MCP server renaming its tools: labels stay
	}
	o.calls.WithLabelValues(tool, string(state), string(code)).Inc()
	if took > 0 {
		o.dur.WithLabelValues(tool).Observe(took.Seconds())
	}
}

// timedOut counts a call the worker's middleware.timeouts ended (chain).
func (o *ops) timedOut() { o.timeouts.Add(1) }

// workerCollector turns the worker's counters (bus.Worker.Counters) into
// metrics when scraped; timeouts are the calls the worker's
// middleware.timeouts ended (ops.timeouts).
type workerCollector struct {
	counters func() bus.WorkerCounters
	timeouts *atomic.Uint64
}

var (
	framesDesc = prometheus.NewDesc("toolbus_worker_frames_total",
		"Frames the worker sent to callers, by kind (chunk, progress, heartbeat, queued, ask, log, final).", []string{"kind"}, nil)
	bytesDesc = prometheus.NewDesc("toolbus_worker_sent_bytes_total",
		"Bytes of the frames the worker sent to callers (message bodies).", nil, nil)
	cancelledDesc = prometheus.NewDesc("toolbus_worker_cancelled_calls_total",
		"Calls on the worker that a cancel or a deadline ended: the caller's cancel, the caller's deadline (Toolbus-Timeout), or the worker's own (middleware.timeouts, default_timeout); not a tool that reported a timeout of its own.", nil, nil)
	overloadedDesc = prometheus.NewDesc("toolbus_worker_overloaded_total",
		"Calls the worker answered overloaded: its max_in_flight calls were running.", nil, nil)
	callersGoneDesc = prometheus.NewDesc("toolbus_worker_caller_gone_calls_total",
		"Calls the worker cancelled because their caller was gone (nothing subscribed to their reply subject for a while).", nil, nil)
	jsErrorsDesc = prometheus.NewDesc("toolbus_worker_jetstream_errors_total",
		"JetStream operations of the durable path, kept results and session affinity that failed (each logged).", nil, nil)
	droppedDesc = prometheus.NewDesc("toolbus_worker_dropped_messages_total",
		"Messages NATS dropped because the worker did not take them in time, by subscription (calls, cancels, lists, answers, services, probes, replies); a dropped call's caller sees worker_lost after its stall timeout.", []string{"subscription"}, nil)
)

func (c workerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{framesDesc, bytesDesc, cancelledDesc, overloadedDesc, callersGoneDesc, jsErrorsDesc, droppedDesc} {
		ch <- d
	}
}

func (c workerCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.counters()
	for kind, v := range n.Frames {
		ch <- prometheus.MustNewConstMetric(framesDesc, prometheus.CounterValue, float64(v), string(kind))
	}
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.CounterValue, float64(n.SentBytes))
	ch <- prometheus.MustNewConstMetric(cancelledDesc, prometheus.CounterValue, float64(n.Cancelled+c.timeouts.Load()))
	ch <- prometheus.MustNewConstMetric(overloadedDesc, prometheus.CounterValue, float64(n.Overloaded))
	ch <- prometheus.MustNewConstMetric(callersGoneDesc, prometheus.CounterValue, float64(n.CallersGone))
	ch <- prometheus.MustNewConstMetric(jsErrorsDesc, prometheus.CounterValue, float64(n.JetStreamErrors))
	// The kinds are the bus's few constants: the label is bounded.
	for kind, v := range n.Dropped {
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(v), kind)
	}
}

// serve adds the running worker's metrics to the endpoint and makes
// /readyz answer for it; mcp are its mounted MCP servers (nil: none).
func (o *ops) serve(nc *nats.Conn, js jetstream.JetStream, w *bus.Worker, mcpServers *mcp.Servers) {
	var clients []*mcp.Client
	if mcpServers != nil {
		clients = mcpServers.Clients()
	}
	for _, c := range clients {
		o.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "toolbus_mcp_server_up", Help: "1 while a mounted MCP server is reachable (a live session, or the last connection worked).",
			ConstLabels: prometheus.Labels{"server": c.Name()},
		}, func() float64 {
			if c.Up() {
				return 1
			}
			return 0
		}))
	}
	o.reg.MustRegister(workerCollector{w.Counters, &o.timeouts},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolbus_worker_calls_in_flight", Help: "Calls the worker is running."},
			func() float64 { return float64(w.InFlight()) }))
	natsReady := opshttp.NATSReady(nc)
	jsReady := func() (bool, string) { return true, "" }
	if js != nil {
		jsReady = opshttp.JetStreamReady(js)
	}
	o.stage.Serve(func() (bool, string) {
		if ok, why := natsReady(); !ok {
			return false, why
		}
		if w.Draining() {
			return false, "not ready: draining (stopping; no new calls)"
		}
		// JetStream or a mounted MCP server that is down leaves the worker
		// ready (its core calls, its other tools serve; the others fail
		// clearly): degraded.
		var degraded []string
		if ok, why := jsReady(); !ok {
			degraded = append(degraded, why)
		}
		var down []string
		for _, c := range clients {
			if !c.Up() {
				down = append(down, c.Name())
			}
		}
		if len(down) > 0 {
			degraded = append(degraded, fmt.Sprintf("MCP server %s down", strings.Join(down, ", ")))
		}
		if len(degraded) > 0 {
			return true, "ready, degraded: " + strings.Join(degraded, "; ")
		}
		return true, "ready"
	})
}

func (o *ops) stop() {
	if o != nil {
		o.ep.Stop()
	}
}

// probe is --probe: a GET of url within 5s; 0 when it answers 200. A
// URL without a scheme (the --http address and a path) is http://.
func probe(url string, stderr io.Writer) int {
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	if _, err := neturl.Parse(url); err != nil {
		fmt.Fprintf(stderr, "worker: --probe: %v; want a URL such as http://127.0.0.1:9464/healthz\n", err)
		return exitUsage
	}
	if err := opshttp.Probe(url); err != nil {
		fmt.Fprintln(stderr, "worker: probe:", err)
		return exitFailed
	}
	return exitOK
}
