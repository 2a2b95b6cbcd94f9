package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/internal/buildinfo"
	"github.com/toolbus/toolbus/internal/otelenv"
	"github.com/toolbus/toolbus/internal/urlredact"
	"github.com/toolbus/toolbus/mcp"
)

// toolctl mcp: the fleet as an MCP server (mcp.Gateway).
//
//	toolctl mcp serve --listen 127.0.0.1:8808     # Streamable HTTP at http://127.0.0.1:8808/mcp
//	toolctl mcp stdio --session my-agent          # one MCP session on stdin/stdout, for clients that spawn servers
//	toolctl --config worker.yaml mcp login SERVER  # authorize a mounted server with oauth for the fleet (mcp_login.go)
//
// Each MCP session is a toolbus session (over HTTP the Mcp-Session-Id;
// over stdio --session, or a random one): tools/list shows its active
// groups and changes with them and with the workers; calls, progress and
// cancels go over the bus. With --tokens, serve admits HTTP clients by
// bearer token and each calls as its token's identity; without, it
// refuses to listen beyond loopback unless --insecure. serve logs "MCP gateway listening url=…" on
// stderr (and, with --http ADDR, "operator endpoint http=…" before it
// connects to NATS: metrics and health, see mcp_ops.go), logs each
// session and tools/call, and stops on SIGINT or SIGTERM (exit 0) as a
// worker does: it logs "draining", answers /readyz 503 from then on,
// takes no new session or call (503), lets its calls in flight finish
// for --grace (30 s by default, as the worker's; their clients may still
// resume a stream, answer an elicitation and ping), then ends the rest
// interrupted and their clients get those results (a second signal ends
// them at once, as a NATS connection closed for good before the stop
// does; one closed during the grace ends each call as a silent worker
// does, worker_lost within seconds); stdio ends when the client closes stdin, or on
// SIGINT or SIGTERM at once, its calls in flight interrupted (their
// interrupted results written first, for at most 5 s; exit 0; the
// answers not delivered by then are counted in one warning), and logs
// only to stderr. Exit codes as
// for every command: 2 bad usage, 5 NATS unreachable, 1 anything else.
// Requests still running when stdin ends are answered first (for at most
// --drain, 30 s by default, mcp_stdio.go); answers still blocked 5 s
// later on a stdout the client no longer reads are dropped, and stdio
// exits 0 as it does on a signal, rather than wait on the pipe for ever.
// The answers not delivered then (calls still running after the drain,
// answers the client did not read) are counted in one warning with why,
// as on a signal. A line of stdin whose ids the go-sdk would answer under
// other ids (1.5 as 1) is refused at once, -32600 under the id as sent,
// as serve refuses such a POST (mcp.CheckIDs), and is not waited for.
// serve and stdio create the group-state bucket when no worker has yet,
// login and logout the grants bucket, with --kv-replicas replicas (1 by
// default, as a worker's --kv-replicas; 1 to 5): give the workers' value,
// 3 on a 3-node cluster, since a bucket keeps the replicas it is made
// with, and one of 1 is lost with its node. A bucket that exists is bound
// as it is. Replicas above 1 on a server that is no cluster stop the
// command, exit 1, saying so.
// The gateway is a command of toolctl rather than a worker flag so that
// it runs wherever the MCP client is, with no tools of its own.

func init() {
	var o mcpOptions
	register(&command{
		name: "mcp",
		long: true,
		args: "serve|stdio|login SERVER|logout SERVER",
		summary: "serve the fleet's tools to MCP clients: `mcp serve --listen ADDR` over Streamable HTTP (at /mcp), " +
			"`mcp stdio --session S` on stdin/stdout; `mcp login SERVER` authorizes a mounted MCP server with oauth for every worker, `mcp logout SERVER` forgets that",
		modes: [][2]string{
			{"serve [--listen ADDR]", "serve the fleet's tools to MCP clients over Streamable HTTP (at /mcp)"},
			{"stdio [--session S]", "serve them to one MCP client on stdin/stdout, for clients that spawn servers"},
			{"login SERVER", "authorize a mounted MCP server with oauth for every worker (with --config)"},
			{"logout SERVER", "forget that authorization"},
		},
		flags: o.register,
		run:   o.run,
	})
}

type mcpOptions struct {
	listen          string
	session         string
	callTimeout     time.Duration
	sessionTimeout  time.Duration
	maxSessions     int
	maxConns        int
	maxCalls        int
	maxGatewayCalls int
	anyHost         bool
	tokens          string
	insecure        bool
	httpAddr        string
	expose          string
	streamPoll      time.Duration
	loginTimeout    time.Duration
	force           bool
	drain           time.Duration
	grace           time.Duration
	kvReplicas      int
}

func (o *mcpOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8808", "serve: the `address` to listen on; the endpoint is http://ADDR/mcp")
	fs.StringVar(&o.session, "session", "", "stdio: the toolbus `session` of the MCP session (default: a new random one)")
	config.DurationVar(fs, &o.callTimeout, "call-timeout", 0, "bound every call by this `duration` (0: only the MCP client's cancel)")
	config.DurationVar(fs, &o.sessionTimeout, "session-timeout", mcp.DefaultGatewaySessionTimeout, "serve: close an HTTP session idle for this `duration` (negative: never)")
	config.IntVar(fs, &o.maxSessions, "max-sessions", mcp.DefaultGatewayMaxSessions, "serve: the most HTTP `sessions` open at once, shared fairly between sources: a client's --tokens identity, else its address (an IPv6 address's /64; X-Forwarded-For is not trusted, so clients behind one NAT or proxy are one source). At the bound, an initialize from a source holding 2 fewer than the source holding the most ends that one's least recently used session; any other is answered 503 (negative: no bound)")
	config.IntVar(fs, &o.maxCalls, "max-session-calls", mcp.DefaultGatewayMaxSessionCalls, "serve and stdio: the most `requests` reaching the fleet (tools/call, resource, prompt and completion requests) one session runs at once; a call past it ends at once, code overloaded, another request gets an error (negative: no bound)")
	config.IntVar(fs, &o.maxGatewayCalls, "max-calls", mcp.DefaultGatewayMaxCalls, "serve and stdio: the most `requests` reaching the fleet all sessions together run at once (as --max-session-calls counts them); past it a call ends at once, code overloaded, another request gets an error (negative: no bound)")
	config.IntVar(fs, &o.maxConns, "max-conns", mcp.DefaultGatewayMaxConns, "serve: the most `connections` held at once; at the bound a new connection takes the place of one waiting for a request (of the address holding the most), and is closed at once when every held one is serving a request or an event stream: keep it above twice --max-sessions and below the file limit (negative: no bound)")
	fs.BoolVar(&o.anyHost, "any-host", false, "serve: accept a non-loopback Host header on a loopback address (behind a local reverse proxy)")
	fs.StringVar(&o.tokens, "tokens", "", "serve: admit clients by bearer token: a `file` of IDENTITY TOKEN lines (toolctl auth init writes gateway-tokens); each calls as its identity")
	fs.BoolVar(&o.insecure, "insecure", false, "serve: allow listening on a non-loopback address without --tokens")
	fs.StringVar(&o.expose, "expose-server", "", "list the tools of these MCP `servers` (comma-separated names of mcp_servers the workers mount) under their own names: the gateway as a proxy of those servers")
	config.DurationVar(fs, &o.streamPoll, "stream-poll", 0, "serve: close the HTTP stream of a call still running after this `duration`; the client resumes it (SEP-1699) and gets the result there (0: never)")
	config.DurationVar(fs, &o.grace, "grace", config.DefaultGracePeriod, "serve: on SIGTERM or SIGINT, how long the calls in flight may finish before they are interrupted, while new sessions and calls are refused (a `duration`; 0 interrupts at once; a second signal interrupts them then)")
	config.DurationVar(fs, &o.drain, "drain", stdioDrain, "stdio: once stdin ends, answer the requests still running for at most this `duration`; calls still running after it end interrupted and their answers are dropped (0: do not wait)")
	config.DurationVar(fs, &o.loginTimeout, "login-timeout", 5*time.Minute, "login: how long to wait for the browser to come back (a `duration`)")
	fs.BoolVar(&o.force, "force", false, "login: authorize again even when the stored grant still works")
	config.IntVar(fs, &o.kvReplicas, "kv-replicas", 1, "serve, stdio and login: the `replicas` of the KV bucket it creates when no worker has yet (serve and stdio the group state, login and logout the MCP grants), as a worker's --kv-replicas: give the workers' value (1-5, 3 on a 3-node cluster)")
	fs.StringVar(&o.httpAddr, "http", "", "serve: the operator endpoint's `address` (Prometheus /metrics, /healthz, /readyz); off when empty")
}

func (o *mcpOptions) run(ctx context.Context, e *env, args []string) int {
	if o.kvReplicas < 1 || o.kvReplicas > 5 {
		return e.usagef("--kv-replicas: replicas must be 1 to 5, got %d", o.kvReplicas)
	}
	if len(args) > 0 && (args[0] == "login" || args[0] == "logout") {
		if len(args) != 2 {
			return e.usagef("toolctl --config FILE mcp %s SERVER: name one of the config's mcp_servers", args[0])
		}
		return o.login(ctx, e, args[0] == "logout", args[1])
	}
	const mcpUsage = "toolctl mcp serve [--listen ADDR] | toolctl mcp stdio [--session S] | toolctl --config FILE mcp login|logout SERVER"
	switch {
	case len(args) == 0:
		return e.usagef("mcp takes a subcommand: serve, stdio, login SERVER or logout SERVER: %s", mcpUsage)
	case args[0] != "serve" && args[0] != "stdio":
		return e.usagef("unknown mcp subcommand %q: want serve, stdio, login SERVER or logout SERVER: %s", args[0], mcpUsage)
	case len(args) > 1:
		return e.usagef("mcp %s takes no arguments, got %q: %s", args[0], args[1:], mcpUsage)
	}
	if o.callTimeout < 0 {
		return e.usagef("--call-timeout must not be negative, got %v", o.callTimeout)
	}
	if o.streamPoll < 0 {
		return e.usagef("--stream-poll must not be negative, got %v", o.streamPoll)
	}
	if o.drain < 0 {
		return e.usagef("--drain must not be negative, got %v", o.drain)
	}
	if o.grace < 0 {
		return e.usagef("--grace must not be negative, got %v", o.grace)
	}
	if o.sessionTimeout == 0 {
		return e.usagef("--session-timeout must not be 0 (negative means never)")
	}
	// The gateway takes 0 for its default: a 0 given is refused, not
	// served as 1024.
	for _, b := range []struct {
		name string
		n    int
	}{{"max-sessions", o.maxSessions}, {"max-conns", o.maxConns}, {"max-session-calls", o.maxCalls}, {"max-calls", o.maxGatewayCalls}} {
		if b.n == 0 {
			return e.usagef("--%s must not be 0 (negative means no bound)", b.name)
		}
	}
	var tokens map[string]string
	if o.tokens != "" {
		var err error
		if tokens, err = auth.ReadTokens(o.tokens); err != nil {
			return e.usagef("%v", err)
		}
		if len(tokens) == 0 {
			return e.usagef("%s holds no tokens: no MCP client could connect; add callers (toolctl auth init --caller ID) or leave out --tokens on a loopback address", o.tokens)
		}
	}
	if args[0] == "serve" {
		// An address without host:port ("" especially: every interface,
		// any port) would pass for loopback below and be listened on.
		if _, _, err := net.SplitHostPort(o.listen); err != nil {
			return e.usagef("invalid --listen %q: want HOST:PORT, such as 127.0.0.1:8808 (%v)", o.listen, err)
		}
		if o.httpAddr != "" {
			if _, _, err := net.SplitHostPort(o.httpAddr); err != nil {
				return e.usagef("invalid --http %q: want HOST:PORT, such as 127.0.0.1:9465 (%v)", o.httpAddr, err)
			}
		}
	}
	if args[0] == "serve" && tokens == nil && !o.insecure {
		if host, _, _ := net.SplitHostPort(o.listen); !loopback(host) {
			return e.usagef("refusing to serve MCP on %s without --tokens: anyone who reaches it could call every tool; give --tokens FILE (toolctl auth init writes one), or --insecure", o.listen)
		}
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil)) // stdout is the MCP stream in stdio mode
	// The operator endpoint first: an address in use stops the gateway
	// before it connects, and probes are answered while it connects.
	var m *gatewayMetrics
	if o.httpAddr != "" && args[0] == "serve" {
		m = newGatewayMetrics()
		ep, err := m.listen(o.httpAddr, log)
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		defer ep.Stop()
		m.stage.NotReady("connecting to NATS at " + urlredact.List(e.url()))
	}
	e.serving = true
	nc, err := e.conn()
	if err != nil {
		return exitCode(err)
	}
	if m != nil {
		m.stage.Connected(nc)
		m.stage.NotReady("starting")
	}
	// The first signal stops the gateway (serve lets the calls in flight
	// finish for --grace), a second interrupts those calls at once.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var serving atomic.Pointer[mcp.Gateway] // serve's, for a second signal
	served, watched := make(chan struct{}), make(chan struct{})
	stopped := ctx.Done()
	go func() {
		defer close(watched)
		select {
		case s := <-sigs:
			if args[0] == "serve" {
				// Not ready before it refuses anything.
				m.drain()
				log.Info("draining: no new requests; calls in flight may finish", "signal", s.String(), "grace", o.grace)
			}
			stop()
		case <-stopped:
		case <-served:
			return
		}
		select {
		case s := <-sigs:
			if g := serving.Load(); g != nil {
				log.Warn("second signal: interrupting the calls in flight now", "signal", s.String())
				g.Interrupt()
			}
		case <-served:
		}
	}()
	defer func() { close(served); <-watched }()
	// The connection closed for good (nats.go stopped reconnecting: the
	// server revoked the gateway's user, or closed it with an error
	// nats.go takes for fatal): the gateway can relay nothing more, so it
	// stops as on a signal and exits 1, for its supervisor to start it
	// again, as a worker does, rather than live on with every call failing.
	ctx, connLost := context.WithCancelCause(ctx)
	defer connLost(nil)
	nc.SetClosedHandler(func(*nats.Conn) { connLost(errConnClosed) })
	if nc.IsClosed() { // closed before the handler was set
		connLost(errConnClosed)
	}
	closed := func() bool {
		if !errors.Is(context.Cause(ctx), errConnClosed) {
			return false
		}
		log.Error("NATS connection closed for good; the gateway can relay nothing more and stops", "err", nc.LastError())
		return true
	}
	tracer, shutdownTraces, err := otelenv.Setup(ctx, "toolbus-gateway", "github.com/toolbus/toolbus/mcp", buildinfo.Version(), log)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shutdownTraces(sctx)
	}()
	gopts := &mcp.GatewayOptions{
		Logger: log, KVReplicas: o.kvReplicas, CallTimeout: o.callTimeout, SessionTimeout: o.sessionTimeout, MaxSessions: o.maxSessions, MaxConns: o.maxConns, MaxSessionCalls: o.maxCalls, MaxCalls: o.maxGatewayCalls, DisableLocalhostProtection: o.anyHost,
		Client: &bus.ClientOptions{Filter: e.permissionFilter(log), Identity: e.cfg.NATS.Identity},
		Tokens: tokens, Tracer: tracer, ExposeServers: splitList(o.expose), StreamPoll: o.streamPoll, StopGrace: o.grace,
		// A person's "accept" to the gateway's elicitation approves the
		// call (as toolctl approve would) and the gateway sends it again.
		Approve: func(ctx context.Context, scope, callID, by string) error {
			g, _ := e.guard(ctx)
			if g == nil {
				return errors.New("the permission store is not reachable")
			}
			_, err := g.Approve(ctx, scope, callID, by)
			return err
		},
		// A "decline" refuses it (as toolctl deny would): no longer
		// pending, and denied when sent again.
		Deny: func(ctx context.Context, scope, callID, by, reason string) error {
			g, _ := e.guard(ctx)
			if g == nil {
				return errors.New("the permission store is not reachable")
			}
			_, err := g.Deny(ctx, scope, callID, by, reason)
			return err
		},
	}
	if m != nil {
		gopts.OnCall = m.onCall
	}
	g, err := mcp.NewGateway(ctx, nc, gopts)
	if err != nil {
		fmt.Fprintln(e.stderr, "toolctl:", needCluster(err, o.kvReplicas))
		return exitError
	}
	defer g.Close()
	if m != nil {
		m.serve(nc, g)
	}
	if args[0] == "stdio" {
		d := newDrainIO(e.stdin, e.stdout, o.drain)
		t := &sdk.IOTransport{Reader: d.reader(), Writer: d.writer()}
		// On a signal the calls end interrupted and their results are
		// written before the session closes: the go-sdk writes nothing
		// once it closes. Writes still blocked then (a client that
		// stopped reading stdout) are given up, else the close would
		// wait for them for ever. At the end of stdin they are given up
		// likewise, 5 s after the drain (drainIO.ended).
		defer d.stop()
		sctx, end := context.WithCancel(context.WithoutCancel(ctx))
		defer end()
		defer context.AfterFunc(ctx, func() { g.Interrupt(); d.waitFor(stdioStopWait); d.giveUp(); end() })()
		err := g.Serve(sctx, t, o.session)
		// The answers not delivered are said in one line, not one per
		// answer, with why: on a stop (a signal, or the NATS connection
		// closed for good), and at the end of stdin.
		n, gaveUp := d.dropped()
		switch {
		case n == 0:
		case ctx.Err() != nil:
			why := "the session closed before they were written"
			if gaveUp {
				why = "stdout was not read within the stop's wait"
			}
			log.Warn("mcp stdio: answers dropped while stopping", "dropped", n, "reason", why, "wait", stdioStopWait)
		default:
			why := "their calls were still running when the drain ended, and the session's end interrupted them"
			if gaveUp {
				why = "stdout was not read within the wait after the drain"
			}
			log.Warn("mcp stdio: answers dropped after stdin ended", "dropped", n, "reason", why, "drain", d.drain, "wait", stdioStopWait)
		}
		if closed() {
			return exitError
		}
		if errors.Is(err, errOutputStuck) {
			// The client closed stdin and stopped reading stdout: the
			// session ended as at any end of its input, less the answers
			// the client would not take (said above; a notification
			// given up is no answer, and is said here).
			if ctx.Err() == nil && n == 0 {
				log.Warn("mcp stdio: messages dropped: stdout was not being read after stdin ended")
			}
			return exitOK
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "toolctl:", err)
			return exitError
		}
		return exitOK
	}
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) {
			hint = " (is another gateway running there? give another address with --listen ADDR; port 0 picks a free one, which the log line \"MCP gateway listening\" names)"
		}
		fmt.Fprintf(e.stderr, "toolctl: mcp serve cannot listen on --listen %s: %v%s\n", o.listen, err, hint)
		return exitError
	}
	log.Info("MCP gateway listening", "url", "http://"+l.Addr().String()+"/mcp")
	serving.Store(g)
	// Calls cannot finish over a connection closed for good: no grace.
	defer context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), errConnClosed) {
			g.Interrupt()
		}
	})()
	err = g.ServeListener(ctx, l)
	if closed() {
		return exitError
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(e.stderr, "toolctl:", err)
		return exitError
	}
	return exitOK
}

// errConnClosed ends a gateway whose NATS connection closed for good.
var errConnClosed = errors.New("NATS connection closed for good")

// jsReplicasNotSupported is JetStream's error code for a stream of more
// than one replica on a server that is no cluster
// (JSStreamReplicasNotSupportedErr), as the worker names it.
const jsReplicasNotSupported = 10074

// needCluster says what to do when the server refused a bucket its
// --kv-replicas for being a single node, as the worker says it.
func needCluster(err error, replicas int) error {
	if api := (*jetstream.APIError)(nil); errors.As(err, &api) && api.ErrorCode == jsReplicasNotSupported {
		return fmt.Errorf("%w: replicas above 1 (--kv-replicas %d) need a NATS cluster, and this server is a single node", err, replicas)
	}
	return err
}

// loopback reports whether host is a loopback name or address ("" and the
// unspecified addresses are every interface).
func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
