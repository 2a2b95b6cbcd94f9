package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/auth"
	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/buildinfo"
	"github.com/toolbus/toolbus/internal/gcfloor"
	"github.com/toolbus/toolbus/internal/otelenv"
	"github.com/toolbus/toolbus/internal/urlredact"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // could not start, or stopped by a failure
	exitUsage  = 2 // bad flags or an invalid configuration
)

// startupWait bounds the retries of connecting to NATS and binding the
// group-state bucket at start (a cluster that is still electing leaders).
const startupWait = 2 * time.Minute

func main() {
	// The process's collector: see gcfloor (GOGC or GOMEMLIMIT in the
	// environment override it).
	gcfloor.Start(gcfloor.Default)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage is a command line error that has been reported.
var errUsage = errors.New("usage")

// flags are the command line of one run.
type flags struct {
	fs         *flag.FlagSet
	configPath string
	check      bool
	conn       config.ConnFlags
	listen     string
	storeDir   string
	serverConf string
	insecure   bool
	instance   string
	queue      string
	kvReplicas int
	groupState string
	logFormat  string
	grace      time.Duration
	workspace  string
	shared     bool
	httpAddr   string
	logLevel   string
	version    bool
	probe      string
	// sources are, for each config key a flag or variable set, which
	// one (config.ConnFlags.Apply's, and the worker's own flags').
	sources map[string]string
}

func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	f := &flags{fs: flag.NewFlagSet("worker", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: worker [flags]\n\n"+
			"Serves tools on NATS. With no flags: an embedded NATS server with JetStream on\n"+
			"127.0.0.1:4222 and the built-in tools. Flags override the config file.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&f.configPath, "config", "", "YAML config `file` (see README: Configuration)")
	fs.BoolVar(&f.check, "check-config", false, "validate the configuration and the flags, then exit (0 when valid)")
	f.conn.NoIdentity = true // a worker calls as nobody
	f.conn.Register(fs)
	fs.StringVar(&f.listen, "listen", "", "embedded server client `address` (default: the --server-config file's listen, else 127.0.0.1:4222; port 0 picks one)")
	fs.StringVar(&f.storeDir, "store-dir", "", "embedded server JetStream `directory` (default: the --server-config file's store_dir, else "+config.DataDir()+"/jetstream)")
	fs.StringVar(&f.serverConf, "server-config", "", "embedded server: nats-server configuration `file` to start from, e.g. the roles of toolctl auth init (then also --nkey worker.nk)")
	fs.BoolVar(&f.insecure, "insecure", false, "embedded server: allow listening on a non-loopback address without authentication")
	fs.StringVar(&f.instance, "instance", "", "instance `name` on logs and responses (default <hostname>-<pid>)")
	fs.StringVar(&f.queue, "queue", "", "NATS queue `group` shared with the other workers (default toolbus)")
	fs.StringVar(&f.groupState, "group-state", "", "where sessions' active groups live (a `store`): kv (default; the fleet's JetStream KV) or memory (this worker only; no JetStream needed)")
	config.IntVar(fs, &f.kvReplicas, "kv-replicas", 1, "`replicas` of the KV buckets this worker creates (group state, sessions, kept results, MCP grants; the permission buckets and the durable path's streams too unless permissions.kv_replicas or durable.replicas says; 1-5, 3 on a 3-node cluster)")
	fs.StringVar(&f.workspace, "workspace", "", "`directory` of the file tools and where shell and Python commands start (default "+config.DataDir()+"/workspace)")
	fs.BoolVar(&f.shared, "shared-workspace", false, "every worker mounts the same workspace: the file, shell and Python tools need no session affinity")
	fs.StringVar(&f.httpAddr, "http", "", "serve Prometheus /metrics, /healthz and /readyz on this `address` (e.g. 127.0.0.1:9464; port 0 picks one); off by default")
	fs.StringVar(&f.logLevel, "log-level", "", "log `level`: debug, info, warn or error (default info)")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.StringVar(&f.probe, "probe", "", "GET this `URL` (a worker's /healthz for a container healthcheck, its /readyz for readiness; http:// when it has no scheme) and exit 0 when it answers 200: a healthcheck for images without curl")
	fs.StringVar(&f.logFormat, "log-format", "", "log `format`: text or json (default text)")
	config.DurationVar(fs, &f.grace, "grace", 0, "on SIGTERM/SIGINT/SIGHUP, how long running calls may finish before they are interrupted (a `duration`; default 30s; 0 interrupts at once)")
	if err := config.ParseFlags(fs, args, "worker -h"); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "worker: unexpected argument %q (flags start with -; see worker -h)\n", fs.Arg(0))
		return nil, errUsage
	}
	return f, nil
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// loadConfig reads the config file (or the defaults), applies the flags
// and environment over it and validates the result.
func loadConfig(f *flags) (*config.Config, error) {
	cfg := config.Default()
	if f.configPath != "" {
		var err error
		if cfg, err = config.Load(f.configPath); err != nil {
			return nil, err
		}
	}
	sources := f.conn.Apply(f.fs, &cfg.NATS, true)
	f.sources = sources
	f.fs.Visit(func(fl *flag.Flag) {
		src := "flag --" + fl.Name
		switch fl.Name {
		case "listen":
			cfg.Embedded.Listen, sources["embedded.listen"] = f.listen, src
		case "store-dir":
			cfg.Embedded.StoreDir, sources["embedded.store_dir"] = f.storeDir, src
		case "server-config":
			cfg.Embedded.ServerConfig, sources["embedded.server_config"] = f.serverConf, src
		case "insecure":
			cfg.Embedded.Insecure, sources["embedded.insecure"] = f.insecure, src
		case "instance":
			cfg.Instance, sources["instance"] = f.instance, src
		case "queue":
			cfg.QueueGroup, sources["queue_group"] = f.queue, src
		case "log-format":
			cfg.LogFormat, sources["log_format"] = f.logFormat, src
		case "log-level":
			cfg.LogLevel, sources["log_level"] = f.logLevel, src
		case "group-state":
			cfg.State.Groups, sources["state.groups"] = f.groupState, src
		case "grace":
			cfg.GracePeriod, sources["grace_period"] = f.grace, src
		case "workspace":
			cfg.Builtins.Workspace, sources["builtins.workspace"] = f.workspace, src
		case "shared-workspace":
			cfg.Builtins.SharedWorkspace, sources["builtins.shared_workspace"] = f.shared, src
		}
	})
	var errs config.Errors
	if err := cfg.Validate(); err != nil && !errors.As(config.Attribute(err, sources), &errs) {
		return nil, err
	}
	// An empty value (--store-dir "$DIR" with DIR unset) is not the
	// default: the embedded server would listen nowhere, the store and
	// the workspace would fail at the start, the queue group would be
	// the bus's default while the fleet's permission check looked for
	// workers of group "", and the embedded server would start without
	// the config file's server_config (its roles). Named here, before.
	for _, e := range []struct{ name, want string }{
		{"listen", "an address such as 127.0.0.1:4222"},
		{"store-dir", "a directory"},
		{"server-config", "a nats-server configuration file"},
		{"workspace", "a directory"},
		{"queue", "a queue group name such as toolbus"},
		{"instance", "a name unique in the fleet"},
		{"log-level", "debug, info, warn or error"},
		{"log-format", "text or json"},
		{"group-state", "kv or memory"},
	} {
		if fl := f.fs.Lookup(e.name); given(f.fs, e.name) && fl.Value.String() == "" {
			errs = append(errs, &config.Error{File: "flag --" + e.name, Reason: "empty: give " + e.want + ", or leave the flag out for the default"})
		}
	}
	switch {
	case f.kvReplicas < 1 || f.kvReplicas > 5:
		errs = append(errs, &config.Error{File: "flag --kv-replicas", Reason: fmt.Sprintf("replicas must be 1 to 5, got %d", f.kvReplicas)})
	case f.kvReplicas > 1 && len(cfg.NATS.URLs) == 0:
		errs = append(errs, &config.Error{File: "flag --kv-replicas", Reason: fmt.Sprintf("%d replicas need a NATS cluster (--nats); the embedded server is a single node", f.kvReplicas)})
	}
	// The embedded server's flags do nothing when the worker joins
	// servers: a contradiction to name, not a flag to ignore (a NATS_URL
	// left in the environment would take a --listen worker elsewhere).
	if len(cfg.NATS.URLs) > 0 {
		joined := cmp.Or(sources["nats.urls"], "nats.urls in the configuration")
		for _, name := range []string{"listen", "store-dir", "server-config", "insecure"} {
			if given(f.fs, name) {
				errs = append(errs, &config.Error{File: "flag --" + name,
					Reason: fmt.Sprintf("it is for the embedded server, which is not started when the worker joins NATS servers (%s): give one or the other", joined)})
			}
		}
	}
	// Replicas in the file, against the servers the flags may have given.
	if len(cfg.NATS.URLs) == 0 {
		single := func(key string, n int) {
			if n > 1 && n <= 5 {
				errs = append(errs, cfg.Errorf(key, "%d replicas need a NATS cluster (nats.urls or --nats); the embedded server is a single node", n))
			}
		}
		single("durable.replicas", cfg.Durable.Replicas)
		if cfg.Permissions != nil {
			single("permissions.kv_replicas", cfg.Permissions.KVReplicas)
		}
	}
	if f.httpAddr != "" {
		if _, port, err := net.SplitHostPort(f.httpAddr); err != nil {
			errs = append(errs, &config.Error{File: "flag --http", Reason: fmt.Sprintf("want HOST:PORT (e.g. 127.0.0.1:9464): %v", err)})
		} else if _, err := net.LookupPort("tcp", port); err != nil && port != "" {
			errs = append(errs, &config.Error{File: "flag --http", Reason: fmt.Sprintf("invalid port %q in %s", port, f.httpAddr)})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	// The server configuration's own address and JetStream directory win
	// over defaults nobody chose; a flag or the config file still says
	// more. A file that does not parse is left to the server's start,
	// which says why.
	if file := cfg.Embedded.ServerConfig; file != "" && len(cfg.NATS.URLs) == 0 {
		if listen, store, err := embedded.FileDefaults(file); err == nil {
			if listen != "" && sources["embedded.listen"] == "" && !cfg.Has("embedded.listen") {
				cfg.Embedded.Listen = listen
			}
			if store != "" && sources["embedded.store_dir"] == "" && !cfg.Has("embedded.store_dir") {
				cfg.Embedded.StoreDir = store
			}
		}
	}
	// nats.identity is for toolctl --config reading this file: the worker
	// calls as nobody, and its replies may come to any inbox.
	cfg.NATS.Identity = ""
	// The credential and TLS files' contents, before anything starts
	// (and for --check-config): connecting would retry on them.
	if _, err := cfg.NATS.Options(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil { // reported by the flag package or parseFlags
		return exitUsage
	}
	if f.version {
		if _, err := fmt.Fprintln(stdout, "toolbus worker", cmp.Or(buildinfo.Version(), "(devel)")); err != nil {
			fmt.Fprintf(stderr, "worker: writing the version: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	if given(f.fs, "probe") {
		if f.probe == "" {
			fmt.Fprintln(stderr, "worker: --probe needs a URL, such as http://127.0.0.1:9464/healthz (the worker's --http address and /healthz)")
			return exitUsage
		}
		return probe(f.probe, stderr)
	}
	if given(f.fs, "config") && f.configPath == "" {
		// --config "$FILE" with FILE unset: not the defaults, which
		// would start a worker without the file's permissions.
		fmt.Fprintln(stderr, "worker: --config needs a file, such as worker.yaml (see README: Configuration)")
		return exitUsage
	}
	cfg, err := loadConfig(f)
	if err != nil {
		fmt.Fprintf(stderr, "worker: invalid configuration:\n%v\n", err)
		return exitUsage
	}
	// Said when the connection fails: a URL of one source may meet the
	// TLS settings of another, and TLS settings may meet a server that
	// offers no TLS.
	said := connSaid{
		combined: config.Combined(cfg.NATS, f.configPath, f.sources, cfg.NATS.URL(), ""),
		tls:      config.TLSFrom(cfg.NATS, f.configPath, f.sources),
		note: func(url string, err error) string {
			return config.ConnNote(cfg.NATS, f.configPath, f.sources, url, "", err)
		},
		from: config.URLFrom(cfg.NATS, f.configPath, f.sources, ""),
	}
	if f.check {
		if err := checkEmbedded(cfg, said.tls); err != nil {
			var u *usageError
			if errors.As(err, &u) {
				fmt.Fprintf(stderr, "worker: %v\n", err)
			} else {
				fmt.Fprintf(stderr, "worker: invalid configuration:\n%v\n", err)
			}
			return exitUsage
		}
		if err := checkMounts(cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "worker: invalid configuration:\n%v\n", err)
			return exitUsage
		}
		// A check whose answer is lost (stdout to a full disk) is not a
		// pass: a script reading its exit code would go on unchecked.
		if _, err := fmt.Fprintf(stdout, "configuration OK: %s\n", describe(cfg)); err != nil {
			fmt.Fprintf(stderr, "worker: writing the check's result: %v\n", err)
			return exitFailed
		}
		return exitOK
	}

	instance := cfg.InstanceName()
	// A log reader gone away (a pipe to a shipper that died) loses the
	// log lines, not the worker: without this a write to a broken stderr
	// dies of SIGPIPE, with the running calls. Notify, not Ignore: an
	// ignored signal is inherited by the commands the shell tools run.
	// Taken before the log writer starts and given back after it has
	// written its last line (defers run last first).
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	logs := newLogWriter(stderr)
	defer logs.Close()
	log := cfg.Logger(logs).With("instance", instance)
	sigs := make(chan os.Signal, 2)
	// SIGHUP too: a closed terminal (or an operator expecting a reload,
	// which the worker does not do) stops it gracefully, where Go's
	// default would kill it with its calls.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// A signal during the start cancels it; one right after it is a stop.
	startCtx, cancelStart := context.WithCancel(context.Background())
	defer cancelStart()
	started := make(chan struct{})
	interrupted := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-sigs:
			cancelStart()
			interrupted <- s
		case <-started:
			interrupted <- nil
		}
	}()
	w, err := start(startCtx, cfg, instance, f.kvReplicas, f.httpAddr, said, log)
	close(started)
	s := <-interrupted
	if err != nil {
		if s != nil {
			log.Info("stopped during start", "signal", s.String())
			return exitOK
		}
		if u := (*usageError)(nil); errors.As(err, &u) {
			fmt.Fprintf(stderr, "worker: %v\n", u)
			return exitUsage
		}
		if api := (*jetstream.APIError)(nil); errors.As(err, &api) && api.ErrorCode == jsReplicasNotSupported {
			err = fmt.Errorf("%w: replicas above 1 (--kv-replicas, permissions.kv_replicas, durable.replicas) need a NATS cluster, and this server is a single node", err)
		}
		log.Error("worker not started", "err", err)
		return exitFailed
	}
	if s == nil {
		select {
		case s = <-sigs:
		case <-w.connClosed():
			// The connection will not come back (the server closed it
			// with an error nats.go takes for fatal): the worker can
			// serve nothing more, so it exits for its supervisor to start
			// it again, rather than live on serving nothing. Its calls
			// are interrupted at once: their answers cannot be sent.
			log.Error("NATS connection closed for good; the worker can serve nothing more and stops", "err", w.nc.LastError(),
				"in_flight", w.worker.InFlight())
			gone, cancel := context.WithCancel(context.Background())
			cancel()
			w.worker.Stop(gone)
			w.worker = nil
			w.close()
			return exitFailed
		}
	}
	log.Info("draining: no new calls; running calls may finish", "signal", s.String(),
		"in_flight", w.worker.InFlight(), "grace", cfg.GracePeriod)
	if others := w.otherClients(); others > 0 {
		// The grace covers this worker's calls, not those the fleet runs
		// through its server.
		log.Warn("this worker's embedded NATS server stops with it, once its own calls are done: the other workers and callers connected to it lose their bus, and calls running on those workers end worker_lost; stop them first, or run a NATS cluster (README: Scaling out)",
			"other_connections", others)
	}
	graceCtx, cancelGrace := context.WithTimeout(context.Background(), cfg.GracePeriod)
	defer cancelGrace()
	go func() {
		select {
		case s := <-sigs:
			log.Warn("second signal: interrupting the running calls now", "signal", s.String())
			cancelGrace()
		case <-graceCtx.Done():
		}
	}()
	w.stop(graceCtx, log)
	log.Info("stopped")
	return exitOK
}

// running is a started worker and everything it must stop.
type running struct {
	instance string
	srv      *embedded.Server // nil when connected to an existing server
	nc       *nats.Conn
	worker   *bus.Worker // announces the toolkit too
	stops    []func()    // the mounts', in start order
	ops      *ops        // the --http endpoint; nil without it
}

// connClosed is closed when the worker's NATS connection has closed
// (nats.CLOSED: it does not reconnect from there).
func (r *running) connClosed() <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	done := func(*nats.Conn) { once.Do(func() { close(ch) }) }
	r.nc.SetClosedHandler(done)
	if r.nc.IsClosed() { // closed before the handler was set
		done(r.nc)
	}
	return ch
}

// otherClients is how many connections other than the worker's own its
// embedded server holds (0 without one).
func (r *running) otherClients() int {
	if r.srv == nil {
		return 0
	}
	return max(r.srv.NATS().NumClients()-1, 0)
}

// opsAddr is the --http endpoint's address, "" without one.
func (r *running) opsAddr() string {
	if r.ops == nil {
		return ""
	}
	return r.ops.addr
}

// connSaid is what a failed connection to NATS says of the settings
// behind it.
type connSaid struct {
	combined string // config.Combined's text
	tls      string // config.TLSFrom's: the TLS settings set, and where each came from
	// note is config.ConnNote's for the server at url (one of the URLs)
	// failing with err: TLS asked of a server that offers none, a
	// certificate not verified with no CA set.
	note func(url string, err error) string
	from string // config.URLFrom's: where the servers' URL came from
}

// start brings a worker up; on error everything started is stopped again.
// said is added to a failed connection's error.
func start(ctx context.Context, cfg *config.Config, instance string, kvReplicas int, httpAddr string, said connSaid, log *slog.Logger) (_ *running, err error) {
	r := &running{instance: instance}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	// The operator endpoint first: an address in use stops the worker
	// before it takes anything, and probes are answered while it waits
	// for NATS.
	if httpAddr != "" {
		r.ops = newOps()
		if err := r.ops.listen(httpAddr, log); err != nil {
			return nil, err
		}
	}

	url := cfg.NATS.URL()
	if url == "" {
		r.ops.notReady("starting the embedded NATS server")
		if err := checkEmbedded(cfg, said.tls); err != nil {
			return nil, err
		}
		if r.srv, err = startServer(cfg.Embedded); err != nil {
			return nil, err
		}
		url = r.srv.ClientURL()
		// A server on every interface is reached locally on loopback.
		url = strings.Replace(url, "://0.0.0.0:", "://127.0.0.1:", 1)
		url = strings.Replace(url, "://[::]:", "://127.0.0.1:", 1)
		auth, err := cfg.NATS.Options()
		if err != nil {
			return nil, err
		}
		r.nc, err = nats.Connect("", append(auth, nats.InProcessServer(r.srv.NATS()), nats.Name("toolbus worker "+r.instance), natsErrors(log))...)
		if err != nil {
			if errors.Is(err, nats.ErrAuthorization) {
				err = fmt.Errorf("%w (the server configuration requires authentication: give the worker role's key, e.g. --nkey worker.nk from toolctl auth init)", err)
			}
			if said.tls != "" {
				err = fmt.Errorf("%w; TLS settings: %s", err, said.tls)
			}
			return nil, fmt.Errorf("connecting to the embedded server: %w", err)
		}
	} else {
		r.ops.notReady("connecting to NATS at " + urlredact.List(url))
		if r.nc, err = connect(ctx, cfg, r.instance, said, log); err != nil {
			return nil, err
		}
	}
	r.ops.connected(r.nc)
	r.ops.notReady("starting")

	if err := checkRole(r.nc); err != nil {
		return nil, err
	}
	js, err := jetstream.New(r.nc)
	if err != nil {
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	state, err := groupState(ctx, cfg, js, url, kvReplicas, log)
	if err != nil {
		return nil, err
	}

	// Calls answered without running their middleware (an unknown tool, bad
	// input, a bad request, overloaded) are logged as the logging
	// middleware logs a failed call.
	tk := toolkit.New(&toolkit.Options{State: state, Logger: log, MaxResultBytes: cfg.Middleware.MaxResultBytes,
		OnRefused: cfg.CallLog(log).Refusals()})
	for _, g := range cfg.ToolkitGroups() {
		// Very many groups take long to register: a signal stops it.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := tk.AddGroup(g); err != nil {
			return nil, err
		}
	}
	if err := builtin.Register(tk, cfg.BuiltinConfig()); err != nil {
		return nil, err
	}
	// Traces when the OTEL_* environment asks for them (internal/otelenv).
	tracer, shutdownTraces, err := otelenv.Setup(ctx, "toolbus-worker", "github.com/toolbus/toolbus/bus", buildinfo.Version(), log)
	if err != nil {
		return nil, err
	}
	r.stops = append(r.stops, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdownTraces(sctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	})
	env := &mountEnv{Config: cfg, Toolkit: tk, Conn: r.nc, JetStream: js, KVReplicas: kvReplicas, Instance: r.instance, Logger: log, Tracer: tracer}
	slices.SortStableFunc(mounts, func(a, b mount) int { return strings.Compare(a.name, b.name) })
	for _, m := range mounts {
		stop, err := m.start(ctx, env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		if stop != nil {
			r.stops = append(r.stops, stop)
		}
	}
	var onFinal func(string, toolkit.State, toolkit.Code, time.Duration)
	var timedOut func()
	if r.ops != nil {
		r.ops.watch(tk)
		onFinal, timedOut = r.ops.onFinal, r.ops.timedOut
	}
	tk.Use(chain(cfg, log, env.middleware, timedOut)...)
	if err := checkFleet(ctx, r.nc, cfg.QueueGroup, r.instance, tk, env.Policy); err != nil {
		return nil, err
	}

	// With JetStream (group state in KV): the durable path, kept results
	// and session affinity.
	var durable *bus.DurableOptions
	var results *bus.ResultsOptions
	var sessions *bus.SessionsOptions
	if cfg.State.Groups == config.GroupsKV {
		sessions = &bus.SessionsOptions{JetStream: js, TTL: cfg.State.SessionTTL, Replicas: kvReplicas, MaxSessions: cfg.State.MaxSessions}
		if d := cfg.Durable; !d.Off {
			durable = &bus.DurableOptions{JetStream: js, AckWait: d.AckWait, MaxDeliver: d.MaxDeliver, Replicas: cmp.Or(d.Replicas, kvReplicas), Tools: d.Tools}
		}
		results = &bus.ResultsOptions{JetStream: js, TTL: cfg.State.ResultTTL, Replicas: kvReplicas}
	}
	r.worker, err = bus.Serve(r.nc, tk, &bus.WorkerOptions{
		Queue:       cfg.QueueGroup,
		Instance:    r.instance,
		MaxInFlight: cfg.Middleware.MaxInFlight,
		Logger:      log,
		Version:     buildinfo.Version(),
		Meta:        env.meta,
		Durable:     durable,
		Results:     results,
		Sessions:    sessions,
		OnFinal:     onFinal,
		Tracer:      tracer,
	})
	if err != nil {
		return nil, err
	}

	var tools []string
	for _, t := range tk.Tools() {
		tools = append(tools, t.Name)
	}
	var groups []string
	for _, g := range tk.Groups() {
		state := "inactive"
		if g.Active {
			state = "active"
		}
		groups = append(groups, g.Name+" ("+state+" by default)")
	}
	if r.ops != nil {
		var stateJS jetstream.JetStream // where the worker keeps state, if anywhere
		if cfg.State.Groups == config.GroupsKV {
			stateJS = js
		}
		r.ops.serve(r.nc, stateJS, r.worker, env.mcp)
	}
	log.Info("toolbus worker ready",
		"nats", urlredact.List(url), "embedded", r.srv != nil, "queue", cfg.QueueGroup, "http", r.opsAddr(),
		"tools", strings.Join(tools, ","), "groups", cmp.Or(strings.Join(groups, ", "), "none"),
		"try", tryLine(url, cfg.NATS, tools))
	return r, nil
}

// groupState is where the worker keeps sessions' active groups: the
// fleet's KV bucket (waiting for a cluster that is still electing its
// leaders), or with state.groups memory its own memory. A server without
// JetStream is said at once, with what to do.
func groupState(ctx context.Context, cfg *config.Config, js jetstream.JetStream, url string, replicas int, log *slog.Logger) (toolkit.GroupState, error) {
	if cfg.State.Groups == config.GroupsMemory {
		log.Info("group state in this worker's memory: sessions' groups are not shared with other workers and are lost on restart")
		return toolkit.NewMemoryState(), nil
	}
	var state *bus.KVState
	err := retry(ctx, log, "binding the group-state bucket", nil, func() error {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := js.AccountInfo(bctx); errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return errNoJetStream
		}
		var berr error
		state, berr = bus.NewKVState(bctx, js, &bus.KVStateOptions{Replicas: replicas, TTL: cfg.State.SessionTTL, MaxSessions: cfg.State.MaxSessions})
		if lerr := js.Conn().LastError(); berr != nil && errors.Is(lerr, nats.ErrPermissionViolation) {
			// The request was refused, not unanswered.
			return fmt.Errorf("%w (%w)", berr, lerr)
		}
		return berr
	}, func(err error) bool {
		// No JetStream, a bucket configuration JetStream refuses (also
		// replicas on a server that is no cluster), or a user without
		// the permissions: none gets better by waiting.
		var api *jetstream.APIError
		return errors.Is(err, errNoJetStream) || (errors.As(err, &api) && (api.ErrorCode == jsStreamInvalidConfig || api.ErrorCode == jsReplicasNotSupported)) ||
			errors.Is(err, nats.ErrPermissionViolation)
	})
	if errors.Is(err, errNoJetStream) {
		return nil, fmt.Errorf("NATS at %s has no JetStream, where the fleet keeps sessions' active groups: enable it on the server (nats-server -js, or jetstream {} in its configuration), "+
			"or run this worker with --group-state memory (groups then live in this worker alone)", urlredact.List(url))
	}
	if err != nil {
		return nil, err
	}
	if st, err := state.Status(ctx); err == nil {
		if st.TTL() != cfg.State.SessionTTL {
			log.Warn("the group-state bucket keeps sessions for another time than configured: a bucket's TTL is set by whoever creates it",
				"bucket", st.Bucket(), "ttl", st.TTL().String(), "configured", cfg.State.SessionTTL.String(),
				"change", "nats kv edit "+st.Bucket()+" --ttl "+cfg.State.SessionTTL.String())
		}
		want := bus.MaxSessionsFor(cfg.State.MaxSessions)
		if kst, ok := st.(*jetstream.KeyValueBucketStatus); ok && kst.StreamInfo().Config.MaxMsgs != want {
			log.Warn("the group-state bucket holds another number of sessions than configured: a bucket's bound is set by whoever creates it",
				"bucket", st.Bucket(), "max_sessions", kst.StreamInfo().Config.MaxMsgs, "configured", want,
				"change", "nats stream edit "+kst.StreamInfo().Config.Name+" --max-msgs "+strconv.FormatInt(want, 10))
		}
	}
	return state, nil
}

var errNoJetStream = errors.New("no JetStream")

// checkRole makes sure the connection may do what only a worker does:
// take the fleet's cancels and answer into any inbox. The server refuses
// another role's key (a caller's, the gateway's) subject by subject,
// asynchronously, and the worker would wait on its retries for replies
// that never come.
func checkRole(nc *nats.Conn) error {
	denied := func(subject string) error {
		if err := nc.Flush(); err != nil {
			return err
		}
		// A refusal comes before the flush's PONG and is the
		// connection's last error by then.
		if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`) {
			return err
		}
		return nil
	}
	refused := func(what string, err error) error {
		return fmt.Errorf("refusing to serve: the worker's NATS user may not %s, which a worker needs: is its key another role's (a caller's, the gateway's)? "+
			"Give it the worker role's, --nkey toolbus-auth/worker.nk from toolctl auth init (%w)", what, err)
	}
	// The cancels, not the calls: every worker takes every cancel, while
	// an operator may confine a worker's calls to some tools or to its
	// queue group.
	cancels := wire.SubjectCancelPrefix + ">"
	sub, err := nc.SubscribeSync(cancels)
	if err != nil {
		return err
	}
	err = denied(cancels)
	sub.Unsubscribe()
	if err != nil {
		return refused(`subscribe to "`+cancels+`" (the cancels of the calls it serves)`, err)
	}
	reply := wire.InboxPrefix + "toolbus-role-check"
	if err := nc.Publish(reply, nil); err != nil {
		return err
	}
	if err := denied(reply); err != nil {
		return refused(`publish to "`+wire.InboxPrefix+`>" (the answers to calls)`, err)
	}
	return nil
}

// checkFleet refuses to serve when a live worker of the fleet has this
// worker's instance id (answers to its requests, calls passed on to its
// sessions and the fleet's view would mix the two up; only live workers
// answer the discovery, so one killed without a goodbye holds no id), or
// when a live worker of the queue group serving some of the same tools
// checks permissions differently (permission.CheckFleet): a call would be
// checked by whichever worker takes it.
func checkFleet(ctx context.Context, nc *nats.Conn, queue, instance string, tk *toolkit.Toolkit, mine *permission.Announced) error {
	f, err := discovery.NewFleet(ctx, nc, nil)
	if err != nil {
		return fmt.Errorf("discovering the fleet: %w", err)
	}
	defer f.Close()
	for _, in := range f.Instances() {
		if in.ID == instance {
			return fmt.Errorf("refusing to serve: a live worker of this fleet already has the instance id %q (version %s, queue group %q): "+
				"give each worker its own --instance (or instance: in the configuration), or leave it unset for <hostname>-<pid>", instance, in.Version, in.Queue)
		}
	}
	var tools []string
	for _, t := range tk.Tools() {
		tools = append(tools, t.Name)
	}
	if err := permission.CheckFleet(f, instance, queue, tools, mine); err != nil {
		return fmt.Errorf("refusing to serve: %w", err)
	}
	return nil
}

// tryLine is how to call one of the tools, for the start line: a
// command that works as pasted, credentials included.
func tryLine(url string, n config.NATS, tools []string) string {
	cmd := toolctlCommand() + " "
	url, userinfo := stripUserInfo(url)
	if url != "nats://"+config.DefaultListen {
		cmd += "--nats " + shellQuote(url) + " "
	}
	if userinfo != "" && n.Credentials == "" && n.NKeySeed == "" && n.User == "" && n.Token == "" {
		// The URL's user and password (or token), by their flags.
		if user, _, ok := strings.Cut(userinfo, ":"); ok {
			n.User, _ = neturl.PathUnescape(user)
		} else {
			n.Token = userinfo
		}
	}
	for _, a := range tryCredentials(n) {
		cmd += a + " "
	}
	if slices.Contains(tools, builtin.Echo) {
		return cmd + `call echo '{"text":"hi"}'`
	}
	return cmd + "tools"
}

// toolctlCommand is how the try line runs toolctl: `go run ./cmd/toolctl`
// for a worker started by go run (its binary in the build cache's
// temporary directory), else the toolctl beside the worker's binary, else
// toolctl from the PATH.
func toolctlCommand() string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/toolctl"
	}
	beside := filepath.Join(filepath.Dir(exe), "toolctl")
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
		return shellQuote(beside)
	}
	return "toolctl"
}

// tryCredentials are the toolctl flags that authenticate as n does, for
// the try line: with an nkey among the keys of toolctl auth init, a
// caller's key with its identity (or else the operator's), as a caller
// would connect; else the worker's own credentials, with a password or
// token by its variable, never in the log.
func tryCredentials(n config.NATS) []string {
	var args []string
	switch {
	case n.Credentials != "":
		args = append(args, "--creds", shellQuote(n.Credentials))
	case n.NKeySeed != "":
		dir, seed := filepath.Dir(n.NKeySeed), n.NKeySeed
		callers, _ := filepath.Glob(filepath.Join(dir, auth.SeedFile(auth.RoleCaller, "*")))
		operator := filepath.Join(dir, auth.SeedFile(auth.RoleOperator, ""))
		prefix, _ := strings.CutSuffix(auth.SeedFile(auth.RoleCaller, ""), ".nk") // "caller-"
		callers = slices.DeleteFunc(callers, func(c string) bool {
			return !wire.ValidIdentity(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(c), prefix), ".nk"))
		})
		switch {
		case len(callers) > 0:
			id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(callers[0]), prefix), ".nk")
			args = append(args, "--nkey", shellQuote(callers[0]), "--identity", id)
		case fileExists(operator) && filepath.Base(seed) == auth.SeedFile(auth.RoleWorker, ""):
			args = append(args, "--nkey", shellQuote(operator))
		default:
			args = append(args, "--nkey", shellQuote(seed))
		}
	case n.User != "":
		args = append(args, "--user", shellQuote(n.User), "--password", `"$NATS_PASSWORD"`)
	case n.Token != "":
		args = append(args, "--token", `"$NATS_TOKEN"`)
	}
	for _, f := range []struct{ flag, file string }{{"--tls-ca", n.TLS.CA}, {"--tls-cert", n.TLS.Cert}, {"--tls-key", n.TLS.Key}} {
		if f.file != "" {
			args = append(args, f.flag, shellQuote(f.file))
		}
	}
	return args
}

// stripUserInfo returns urls (comma-separated) without the user info
// of each, and the first URL's user info ("user:password" or a token).
func stripUserInfo(urls string) (bare, userinfo string) {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		prefix, ui, rest := splitUserInfo(u)
		if ui != "" && userinfo == "" {
			userinfo = ui
		}
		parts[i] = prefix + rest
	}
	return strings.Join(parts, ","), userinfo
}

// splitUserInfo splits a NATS URL into what comes before its user info
// (the scheme), the user info (without its "@"), and the rest.
func splitUserInfo(u string) (prefix, userinfo, rest string) {
	i := strings.Index(u, "://")
	if i >= 0 {
		prefix, u = u[:i+3], u[i+3:]
	}
	host := u
	if j := strings.IndexAny(u, "/?#"); j >= 0 {
		host = u[:j]
	}
	at := strings.LastIndex(host, "@")
	if at < 0 {
		return prefix, "", u
	}
	return prefix, u[:at], u[at+1:]
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stop drains the worker within graceCtx (then interrupts what still
// runs; every caller gets a final; the worker says goodbye first) and
// releases the rest.
func (r *running) stop(graceCtx context.Context, log *slog.Logger) {
	if err := r.worker.Stop(graceCtx); err != nil {
		why := "grace period over" // its timeout
		if errors.Is(err, context.Canceled) {
			why = "running calls interrupted at the second signal"
		}
		log.Warn(why, "err", err)
	}
	r.worker = nil
	r.close()
}

// close releases what is started, in reverse order.
func (r *running) close() {
	r.ops.stop()
	if r.worker != nil {
		r.worker.Stop(context.Background())
	}
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
	if r.nc != nil {
		r.nc.Close()
	}
	if r.srv != nil {
		r.srv.Shutdown()
	}
}

// startServer starts the embedded NATS server, after checking that its
// address is free so that a second worker on the same machine is told why
// it cannot start.
func startServer(e config.Embedded) (*embedded.Server, error) {
	if _, port, _ := net.SplitHostPort(e.Listen); port != "0" {
		l, err := net.Listen("tcp", e.Listen)
		if err != nil {
			return nil, fmt.Errorf("the embedded NATS server cannot listen on %s: %w (is another worker running there? %s)", e.Listen, err, secondServer)
		}
		l.Close()
	}
	if err := os.MkdirAll(e.StoreDir, 0o755); err != nil {
		return nil, fmt.Errorf("JetStream store: %w", err)
	}
	srv, err := embedded.Start(embeddedOptions(e))
	if errors.Is(err, embedded.ErrStoreInUse) {
		return nil, fmt.Errorf("%w (--store-dir DIR, with a --listen ADDR of its own; --nats URL to join)", err)
	}
	return srv, err
}

// secondServer is what a worker whose embedded server's address is
// another's is told to do: a second server needs its own store as well.
const secondServer = "a second embedded server needs its own --listen ADDR and --store-dir DIR; or join the running one with --nats URL"

func embeddedOptions(e config.Embedded) *embedded.Options {
	return &embedded.Options{Listen: e.Listen, StoreDir: e.StoreDir, ConfigFile: e.ServerConfig, Insecure: e.Insecure}
}

// unauthenticated is the usage error of a worker without credentials
// for a server that wants them.
func unauthenticated(server string) error {
	return &usageError{server + " requires authentication and the worker has no credentials: give the worker's with " +
		"--nkey FILE (the worker role's key, toolbus-auth/worker.nk from toolctl auth init), --creds FILE, --user USER with NATS_PASSWORD, or --token " +
		"(or their NATS_* variables, or nats: in --config)"}
}

// usageError is a reason not to start that the command line or the
// configuration must change (exit 2), said on one line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// checkEmbedded says, before anything starts, why the embedded server
// (when there is one) would be refused: a listener beyond loopback that
// admits anyone, unless --insecure; or why the worker's connection to it
// would be: TLS settings (tls, config.TLSFrom's text: which and where
// from) while the server offers no TLS.
func checkEmbedded(cfg *config.Config, tls string) error {
	if cfg.NATS.URL() != "" {
		return nil
	}
	auth, err := embedded.Check(embeddedOptions(cfg.Embedded))
	var exposed *embedded.ExposedError
	switch {
	case err == nil && auth && !cfg.NATS.HasCredentials():
		return unauthenticated("the embedded server's configuration " + cfg.Embedded.ServerConfig)
	case errors.As(err, &exposed) && exposed.Listener == "client":
		return &usageError{fmt.Sprintf("refusing to listen on %s without authentication: whoever reaches it could call every tool and read every result; "+
			"give --server-config with users (toolctl auth init writes one, and the worker's key: --nkey toolbus-auth/worker.nk), listen on 127.0.0.1, "+
			"or pass --insecure (embedded.insecure: true) to listen anyway", exposed.Addr)}
	case errors.As(err, &exposed):
		return &usageError{fmt.Sprintf("refusing the %s listener of the server configuration on %s without authentication: whoever reaches it could use the whole bus; "+
			"give it authorization, bind it to 127.0.0.1, or pass --insecure (embedded.insecure: true) to open it anyway", exposed.Listener, exposed.Addr)}
	case err != nil || tls == "":
		return err
	}
	// The worker connects to its embedded server in process, with its
	// TLS settings as to any server: set for a server that offers no
	// TLS, the connection fails with nats.go's "secure connection not
	// available" alone. They are what the worker trusts and shows when
	// it joins NATS servers; they give the embedded server no TLS.
	if offers, err := embedded.OffersTLS(embeddedOptions(cfg.Embedded)); err != nil || offers {
		return err
	}
	return &usageError{"TLS is set (" + tls + "), but no NATS URL is (nats.urls, --nats, NATS_URL), so the worker runs its embedded server, " +
		"which offers no TLS: nats.tls (--tls-ca, --tls-cert, --tls-key) is what the worker uses to join NATS servers over TLS, not TLS for the embedded server " +
		"(that is a tls block in its embedded.server_config, --server-config). Give the URLs of the servers these settings are for, or leave them out"}
}

// jsStreamInvalidConfig is JetStream's error code for a stream
// configuration it refuses (nats-server's JSStreamInvalidConfigF).
const jsStreamInvalidConfig = 10052

// jsReplicasNotSupported is JetStream's error code for a stream of more
// than one replica on a server that is not clustered
// (JSStreamReplicasNotSupportedErr): it stays so, however long one waits.
const jsReplicasNotSupported = 10074

// connect dials the configured NATS servers, retrying while none answers
// (a cluster that is starting) for up to startupWait. Reconnection after
// that is nats.go's, forever (also through servers refusing the worker's
// credentials for a while: a rotation, a server restarted with an old
// configuration), and logged, as are nats.go's asynchronous errors. A
// server that refuses the worker's credentials or offers no TLS while TLS
// is set is not retried either, nor one whose certificate is not
// verified, and the error says said.note of it: with several servers,
// each server's own failure and note (config.Dial), and the tries end so
// only when every server fails so; while another does not answer (a
// fleet starting), each refusal is logged as an error and the worker
// waits for the others. Each retry line and the error that ends the
// tries say said.combined, when that is not "".
func connect(ctx context.Context, cfg *config.Config, instance string, said connSaid, log *slog.Logger) (*nats.Conn, error) {
	auth, err := cfg.NATS.Options()
	if err != nil {
		return nil, err
	}
	opts := append(auth,
		nats.Name("toolbus worker "+instance),
		nats.MaxReconnects(-1),
		// A link gone silent is noticed in about 30 s, not nats.go's
		// default 4 minutes: the worker reconnects (to another node).
		nats.PingInterval(10*time.Second),
		nats.MaxPingsOutstanding(3),
		nats.IgnoreAuthErrorAbort(),
		natsErrors(log),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS connection lost; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted()) }),
	)
	var nc *nats.Conn
	// The URL is in every retry line and in the error that ends them: a
	// wrong host or port shows at once.
	// The retry lines say the settings combined too: what is wrong may
	// show long before the tries end.
	var attrs []any
	if said.combined != "" {
		attrs = []any{"settings", said.combined}
	}
	// A server's refusal said while the others are waited for, by its
	// URL: said again only when it says something else.
	refusals := map[string]string{}
	err = retry(ctx, log, "connecting to NATS at "+urlredact.List(cfg.NATS.URL()), attrs, func() error {
		var cerr error
		nc, cerr = config.Dial(cfg.NATS.URL(), opts...)
		var each config.ServersError
		if errors.As(cerr, &each) {
			for _, s := range each {
				s.Note = said.note(s.URL, s.Err)
			}
			if serversFatal(each) {
				return cerr
			}
			for _, s := range each {
				if connFatal(s.Err) && refusals[s.URL] != s.Error() {
					refusals[s.URL] = s.Error()
					log.Error("NATS server refused the worker; waiting for the other servers, which did not answer", append([]any{"err", s}, attrs...)...)
				}
			}
		}
		if hint := said.nothingListens(cerr); hint != "" {
			cerr = fmt.Errorf("%w (%s)", cerr, hint)
		}
		return cerr
	}, func(err error) bool {
		// Wrong credentials or certificates do not get better by waiting.
		// With several servers (config.Dial's error names each by its URL,
		// which may hold "tls:" itself), only when every server says so:
		// one misconfigured server does not end the wait for the others of
		// a fleet that is starting.
		var each config.ServersError
		if errors.As(err, &each) {
			return serversFatal(each)
		}
		return connFatal(err)
	})
	switch {
	case errors.Is(err, nats.ErrAuthorization) && !cfg.NATS.HasCredentials():
		return nil, unauthenticated("NATS at " + cfg.NATS.URL())
	case controlLineExceeded(err):
		return nil, &usageError{"NATS at " + urlredact.List(cfg.NATS.URL()) + " refused the worker's connection request as longer than its max_control_line " +
			"(4096 bytes unless its configuration says otherwise): the credentials (a token, a user JWT) are too long for it; " +
			"raise max_control_line in the server's configuration or give shorter credentials"}
	case err != nil && ctx.Err() == nil:
		// Several servers' failures each say their own note.
		if note := said.note(cfg.NATS.URL(), err); note != "" && !errors.As(err, new(config.ServersError)) {
			err = fmt.Errorf("%w (%s)", err, note)
		}
		if said.combined != "" {
			err = fmt.Errorf("%w; %s", err, said.combined)
		}
	}
	return nc, err
}

// nothingListens says, for err, a failure to connect where no server
// of the URL (or of any URL of the list) took the connection, where the
// URL came from and what to do; "" for any other error. A user who meant
// --nats to start a server there learns that the worker starts one only
// without it.
func (said connSaid) nothingListens(err error) string {
	if err == nil || !errors.Is(err, nats.ErrNoServers) {
		return ""
	}
	where, what := "there", "URL"
	var each config.ServersError
	if errors.As(err, &each) {
		if slices.ContainsFunc(each, func(s *config.ServerError) bool { return !errors.Is(s.Err, nats.ErrNoServers) }) {
			return ""
		}
		where, what = "at any of them", "URLs"
	}
	return "no NATS server listens " + where + "; the " + what + " came from " + said.from +
		": start the NATS server first, or give the address of one with --nats, NATS_URL or nats.urls; " +
		"with none of them the worker starts an embedded server of its own"
}

// serversFatal reports whether every server of a list failed in a way
// that waiting does not mend (connFatal): while one did not answer, the
// worker waits for it.
func serversFatal(each config.ServersError) bool {
	return !slices.ContainsFunc(each, func(s *config.ServerError) bool { return !connFatal(s.Err) })
}

// connFatal reports whether err, nats.go's failure to connect to a
// server (or a list), is one that waiting does not mend: wrong
// credentials or certificates, or credentials too long for the server.
func connFatal(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrSecureConnWanted) || strings.Contains(err.Error(), "tls:") ||
		strings.Contains(err.Error(), "x509:") || controlLineExceeded(err)
}

// controlLineExceeded reports whether the server refused the connection
// request (CONNECT, which carries the credentials) as longer than its
// max_control_line: every try gets the same answer.
func controlLineExceeded(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "maximum control line exceeded")
}

// natsErrors logs nats.go's asynchronous errors (a permission the
// server refused, a slow consumer).
func natsErrors(log *slog.Logger) nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if sub != nil {
			log.Warn("NATS error", "subject", sub.Subject, "err", err)
		} else {
			log.Warn("NATS error", "err", err)
		}
	})
}

// retry runs fn until it succeeds, ctx ends, startupWait passes or fatal
// says the error is final, logging each failure with attrs.
func retry(ctx context.Context, log *slog.Logger, what string, attrs []any, fn func() error, fatal func(error) bool) error {
	deadline := time.Now().Add(startupWait)
	wait := 250 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if (fatal != nil && fatal(err)) || time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		log.Warn(what+": retrying", append([]any{"err", err, "in", wait}, attrs...)...)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// describe summarises a valid configuration for --check-config.
func describe(cfg *config.Config) string {
	where := "embedded NATS server on " + cfg.Embedded.Listen
	if u := cfg.NATS.URL(); u != "" {
		where = "NATS at " + urlredact.List(u)
	}
	tools := builtin.DefaultTools
	if cfg.Builtins.Tools != nil {
		tools = nil
		for _, t := range cfg.Builtins.Tools {
			tools = append(tools, t.Name)
		}
	}
	// The exec group a shell or Python tool goes into is added when the
	// file does not declare it: it counts, as the ready line lists it.
	groups := len(cfg.Groups)
	declared := slices.ContainsFunc(cfg.Groups, func(g config.Group) bool { return g.Name == builtin.ExecGroup })
	for _, t := range cfg.Builtins.Tools {
		g := t.Group
		if g == "" {
			g = builtin.DefaultGroup(t.Name)
		}
		if g == builtin.ExecGroup && !declared {
			groups++
			break
		}
	}
	return fmt.Sprintf("%s, queue %s, built-in tools [%s], %s, %s, %s",
		where, cfg.QueueGroup, strings.Join(tools, " "), count(groups, "group", "groups"),
		count(len(cfg.MCPServers), "MCP server", "MCP servers"), count(len(cfg.Skills), "skill directory", "skill directories"))
}

// count is n with the noun's singular or plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
