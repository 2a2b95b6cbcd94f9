package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/toolkit"
)

// ops is the worker's operator endpoint (--http): Prometheus metrics on
// /metrics, liveness on /healthz and readiness on /readyz. Metric names
// follow Prometheus conventions (toolbus_… , _total, _seconds); labels
// are bounded: tool names (the registered ones), states and codes, never
// call or session ids.
type ops struct {
	reg   *prometheus.Registry
	calls *prometheus.CounterVec
	dur   *prometheus.HistogramVec
	srv   *http.Server
	addr  string
}

func newOps() *ops {
	o := &ops{reg: prometheus.NewRegistry()}
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
	return o
}

// onFinal counts every final the worker sends (bus.WorkerOptions.OnFinal),
// calls refused at once included, and times the calls that ran.
func (o *ops) onFinal(tool string, state toolkit.State, code toolkit.Code, took time.Duration) {
	o.calls.WithLabelValues(tool, string(state), string(code)).Inc()
	if took > 0 {
		o.dur.WithLabelValues(tool).Observe(took.Seconds())
	}
}

// serve starts the endpoint on addr for the running worker.
func (o *ops) serve(addr string, nc *nats.Conn, w *bus.Worker, log *slog.Logger) error {
	o.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolbus_worker_calls_in_flight", Help: "Calls the worker is running."},
			func() float64 { return float64(w.InFlight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolbus_nats_connected", Help: "1 while the worker is connected to NATS."},
			func() float64 {
				if nc.IsConnected() {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolbus_nats_reconnects_total", Help: "Times the worker reconnected to NATS."},
			func() float64 { return float64(nc.Stats().Reconnects) }),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if !nc.IsConnected() {
			http.Error(rw, "not ready: not connected to NATS ("+nc.Status().String()+")", http.StatusServiceUnavailable)
			return
		}
		if w.Draining() {
			http.Error(rw, "not ready: draining (stopping; no new calls)", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, "ready")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	o.addr = ln.Addr().String()
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("operator endpoint stopped", "err", err)
		}
	}()
	return nil
}

func (o *ops) stop() {
	if o != nil && o.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		o.srv.Shutdown(ctx)
	}
}

// probe is --probe: a GET of url within 5s; 0 when it answers 200.
func probe(url string, stderr io.Writer) int {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(stderr, "worker: probe:", err)
		return exitFailed
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		fmt.Fprintf(stderr, "worker: probe: %s: %s %s\n", url, resp.Status, strings.TrimSpace(string(b)))
		return exitFailed
	}
	return exitOK
}
