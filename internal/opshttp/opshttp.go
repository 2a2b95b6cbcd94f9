// Package opshttp is the operator HTTP endpoint of toolbus's processes
// (the worker's --http, the MCP gateway's --http): Prometheus metrics on
// /metrics, liveness on /healthz ("ok" while the process runs, also while
// it starts) and readiness on /readyz (200 with a line saying so, 503 with
// the reason while not ready), and Probe, the GET a container healthcheck
// runs. The worker and the MCP gateway start their endpoint before they
// connect to NATS, so an address in use is said before they take
// anything, and their probes are answered while they connect (Stage:
// /readyz says what the start is at until they serve). /readyz asks the
// NATS server for a round trip (NATSReady) at most once a second; one
// that comes while it is on its way answers the last one's result rather
// than wait for it, and /healthz and /metrics never wait for it. At most four
// scrapes of /metrics are gathered at once; one that comes meanwhile
// waits its turn (10 s at most), rather than being refused while a
// neighbour polls /metrics in a loop; one address has at most four
// scrapes in progress or waiting, its others answered 503. A page is
// gathered in memory, then written, and given back as its client takes
// it: the pages held for clients that have not read them yet are at most
// 128 MiB, 64 MiB for one address, a scrape past that answered 503 (a
// worker's 20,000 tool labels make a page of some 30 MB, a few MB
// compressed as Prometheus asks for it), so scrapes that a neighbour
// does not read cost the process 64 MiB, not a page each.
//
// The endpoint holds at most 64 connections at once, so a neighbour that
// opens thousands and sends nothing costs the process 64 file descriptors,
// not the ones its NATS connection and its tools need. It keeps accepting
// rather than leaving connections queued behind the ones it holds (a
// Kubernetes probe gives up after a second, a Prometheus scrape after its
// scrape_timeout): a new connection takes the place of one that has no
// request in progress, chosen from the address (the /64 for IPv6) that
// holds the most connections, among those preferring one that has sent
// nothing, and then the one that has waited longest. A neighbour that
// floods the endpoint therefore closes its own connections, not the
// kubelet's or the scraper's, and a probe that sends its request as it
// connects is answered however many silent connections came before it
// (while a flood from its own address lasts, it may still be crowded out).
// A request in progress whose client reads its answer is never cut; one
// whose answer's write has taken nothing for 2 s (its client reads
// nothing, or only a few KB/s: conncap.Cap) counts as a place to take
// (after the silent ones of its address), so a neighbour that fills the
// 64 with requests whose answers it does not read (GETs of /metrics
// pipelined) gives way to a probe within seconds, not at the 30 s write
// timeout. Only when all 64 are serving requests to clients
// that read is a new connection closed at once: the probe or scrape fails
// at once, as it would against an overloaded process. The endpoints read
// no request body: a request announcing one is answered without waiting
// for it, and its connection closed (a GET announcing a body it never
// sends would otherwise hold its place as a request in progress until
// the 10 s read timeout). A scraper's keep-alive
// connection closed while idle costs it nothing: Go's HTTP client,
// Prometheus's, sends the GET again on a new one.
//
// Metrics labelled by tool (ToolLabels) carry the tool's name as it is,
// and two buckets under labels no tool can have (a tool's name is a token
// of [A-Za-z0-9_-]): "<other>" (OtherTool) for the tools past the
// 20,000 names labelled, "<unknown>" (UnknownTool) for names the process
// does not serve. tool="_other" is the tool of that name, never a bucket.
package opshttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolbus/toolbus/internal/conncap"
)

// maxConns is how many connections the endpoint holds at once.
const maxConns = 64

// writeTimeout bounds the writing of one answer (a variable for a test
// that needs longer to set its scene on a loaded machine), readTimeout
// the reading of one request (for a test that outwaits it).
var (
	writeTimeout = 30 * time.Second
	readTimeout  = 10 * time.Second
)

// Ready says whether the process is ready, and the line /readyz answers
// (the reason when not).
type Ready func() (ok bool, line string)

// Endpoint is a running operator endpoint.
type Endpoint struct {
	srv *http.Server
	// Addr is the address it listens on (with the port chosen for :0).
	Addr string
}

// Start listens on addr and serves reg and ready there, to GET and HEAD
// (other methods are answered 405).
func Start(addr string, reg *prometheus.Registry, ready Ready, log *slog.Logger) (*Endpoint, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", heldPages(takeTurns(maxGathers, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		ok, line := ready()
		if !ok {
			http.Error(rw, line, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, line)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) {
			hint = " (is another worker or gateway serving its endpoint there? give another address with --http ADDR; port 0 picks a free one, which its log then names as http=ADDR)"
		}
		return nil, fmt.Errorf("--http %s: %w%s", addr, err, hint)
	}
	// Bounded in number (maxConns) and per connection: a client that opens
	// many and keeps them (idle, or reading slowly) costs the worker file
	// descriptors its NATS connection and its tools need.
	e := &Endpoint{srv: &http.Server{Handler: noBody(mux),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 8 << 10}, Addr: ln.Addr().String()}
	cl := conncap.Cap(e.srv, ln, maxConns)
	go func() {
		if err := e.srv.Serve(cl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("operator endpoint stopped", "err", err)
		}
	}()
	return e, nil
}

// noBody serves h to requests that announce a body as to others, and
// closes their connection after without reading the body: the endpoints
// read none, and net/http would read up to 256 KB of it, for keep-alive,
// until ReadTimeout. Meanwhile the connection serves a request, a place
// the connection cap never takes: 64 GETs announcing bodies never sent
// held every place, and the probes of other addresses were closed at
// once.
func noBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // -1: chunked, of unknown length
			// Reading the body fails at once: net/http answers with
			// "Connection: close" and closes the connection.
			http.NewResponseController(rw).SetReadDeadline(time.Now())
		}
		h.ServeHTTP(rw, r)
	})
}

// maxGathers is how many scrapes of /metrics are gathered at once, and
// scrapeTimeout how long one waits for its turn (takeTurns). The gather
// itself is not bounded: promhttp gathers with no context, and the
// writing of the page is bounded by writeTimeout.
const (
	maxGathers    = 4
	scrapeTimeout = 10 * time.Second
)

// takeTurns serves at most n requests of h at once; the others wait their
// turn, first come first served, until their context ends. promhttp's
// MaxRequestsInFlight answers those 503 at once, so a neighbour polling
// /metrics in a loop failed most of Prometheus's scrapes. One source (an
// address, the /64 for IPv6, as the connection cap counts them) has at
// most n requests in progress or waiting, its others answered 503 at
// once: a neighbour's flood holds few connections waiting, which would
// be places the cap never takes, and a scrape from elsewhere waits for
// at most n of its requests. Under heldPages, h writes to memory: a turn
// ends when the answer is gathered, not when a slow client has read it.
// One whose context ends while it waits is answered 503.
func takeTurns(n int, h http.Handler) http.Handler {
	turns := make(chan struct{}, n)
	var mu sync.Mutex
	held := map[netip.Prefix]int{} // requests in progress or waiting, by source
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		src := sourceOf(r)
		mu.Lock()
		if held[src] >= n {
			mu.Unlock()
			http.Error(rw, fmt.Sprintf("%d scrapes from this address are in progress or waiting; try again later", n), http.StatusServiceUnavailable)
			return
		}
		held[src]++
		mu.Unlock()
		defer func() {
			mu.Lock()
			if held[src]--; held[src] == 0 {
				delete(held, src)
			}
			mu.Unlock()
		}()
		select {
		case turns <- struct{}{}:
		case <-r.Context().Done():
			http.Error(rw, fmt.Sprintf("Exceeded configured timeout of %v.", scrapeTimeout), http.StatusServiceUnavailable)
			return
		}
		defer func() { <-turns }()
		h.ServeHTTP(rw, r)
	})
}

// sourceOf is where r comes from, as conncap counts sources: its address,
// the /64 for IPv6.
func sourceOf(r *http.Request) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap()
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// Stop closes the endpoint (waiting up to 2s for requests in progress).
func (e *Endpoint) Stop() {
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e.srv.Shutdown(ctx)
}

// Probe GETs url within 5s: nil when it answers 200, else what it said.
func Probe(url string) error {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// NATSMetrics are the connection's metrics: toolbus_nats_connected and
// toolbus_nats_reconnects_total.
func NATSMetrics(connected func() bool, reconnects func() uint64) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolbus_nats_connected", Help: "1 while the process is connected to NATS."},
			func() float64 {
				if connected() {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolbus_nats_reconnects_total", Help: "Times the process reconnected to NATS."},
			func() float64 { return float64(reconnects()) }),
	}
}

// NATSReady is the NATS part of a readiness check: connected, and the
// server answers a round trip (a PING within natsAnswer). A link that went
// silent without closing (a partition, a half-open TCP connection) leaves
// the connection "connected" for minutes, while calls sent to the process
// time out; the round trip notices at once. The answer is kept for a
// second, so /readyz polled by anyone costs the server little, and while
// a round trip is on its way (up to natsAnswer) other callers get the
// last one's answer at once (kept). ok false comes with the reason.
func NATSReady(nc *nats.Conn) func() (ok bool, why string) {
	check := kept(time.Second, func() error { return nc.FlushTimeout(natsAnswer) })
	return func() (bool, string) {
		if !nc.IsConnected() {
			return false, "not ready: not connected to NATS (" + nc.Status().String() + ")"
		}
		if err := check(); err != nil {
			return false, "not ready: the NATS server does not answer: " + err.Error()
		}
		return true, ""
	}
}

// kept runs check for one caller at a time, at most once every period,
// and answers its last result otherwise: a caller that comes while check
// runs does not wait for it (a /readyz behind a round trip to a silent
// server, 2 s, would fail its probe's timeout). The result before the
// first is nil (for NATSReady: the connection's own round trip worked).
func kept(period time.Duration, check func() error) func() error {
	var mu sync.Mutex
	var at time.Time
	var last error
	var running bool
	return func() error {
		mu.Lock()
		if running || time.Since(at) < period {
			err := last
			mu.Unlock()
			return err
		}
		running = true
		mu.Unlock()
		err := check()
		mu.Lock()
		last, at, running = err, time.Now(), false
		mu.Unlock()
		return err
	}
}

// JetStreamReady is the JetStream part of a readiness check, for a
// process that keeps state there (a worker's sessions' groups and pins,
// kept results, the durable queue): JetStream answers an account
// information request within natsAnswer. A cluster that lost its quorum,
// or a server whose JetStream is off or out of resources, leaves NATS up
// (core calls run) while every call needing JetStream fails: the caller
// reports that as degraded, not as unready. The answer is kept for two
// seconds, and while a request is on its way other callers get the last
// one's answer at once; ok false comes with the reason.
func JetStreamReady(js jetstream.JetStream) func() (ok bool, why string) {
	check := kept(2*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), natsAnswer)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err
	})
	return func() (bool, string) {
		if err := check(); err != nil {
			return false, "JetStream unavailable: " + err.Error()
		}
		return true, ""
	}
}

// natsAnswer is how long NATSReady waits for the server's answer (a
// variable for a test that needs a round trip to last).
var natsAnswer = 2 * time.Second
