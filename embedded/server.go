// Package embedded runs a NATS server with JetStream inside the process:
// the default bus of a worker that is given no server, and of the tests.
// It lives apart from package bus so that a program that only calls tools
// does not compile nats-server in.
//
//	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:4222"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer srv.Shutdown()
//	nc, err := srv.Connect() // in-process when it does not listen, TCP otherwise
package embedded

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/serverconf"
)

// ErrStoreInUse is wrapped by the error of Start when another running
// server holds the store directory (Unix only: elsewhere nothing locks it).
var ErrStoreInUse = errors.New("JetStream store in use by another server")

// Options configure an embedded NATS server. A nil *Options means the
// defaults: in-process only, JetStream in a temporary directory.
type Options struct {
	// Name is the server name; empty means "toolbus".
	Name string
	// Listen is the client address, "host:port" ("127.0.0.1:0" picks a
	// free port). Empty means in-process only: no socket at all, clients
	// connect with Server.Connect.
	Listen string
	// StoreDir is the JetStream store directory. Empty means a new
	// temporary directory, removed by Shutdown.
	StoreDir string
	// MaxPayload overrides the server's max_payload (bytes, headers
	// included); zero means the NATS default of 1 MiB.
	MaxPayload int32
	// ReadyTimeout bounds the wait for the server to accept connections;
	// zero means 10s.
	ReadyTimeout time.Duration
	// Log turns on the server's own log (to stderr).
	Log bool
	// ConfigFile is a nats-server configuration file to start from, such
	// as the roles `toolctl auth init` writes (package auth); the fields
	// above override what it says about the same things when they are set
	// (an empty Name or StoreDir and a zero MaxPayload leave the file's),
	// except Listen, whose empty value means no socket whatever the file
	// says.
	ConfigFile string
	// Insecure lets the server listen on an address other than loopback
	// without authentication. Start refuses that otherwise: whoever
	// reaches the port could call every tool, read every result and
	// rewrite every session.
	Insecure bool
}

// Server is an embedded nats-server with JetStream. It is the default
// everywhere toolbus needs a bus and none is given. Its methods are safe
// for concurrent use.
type Server struct {
	ns      *server.Server
	tempDir string
	lock    *os.File // the store directory's, held while the server runs
	shut    sync.Once
}

// Start starts an embedded NATS server with JetStream and waits until it
// accepts connections. A listener beyond loopback that admits clients
// without authentication is refused with an *ExposedError unless
// opts.Insecure. The server holds its store directory locked (a file
// toolbus.lock in it) until Shutdown or the end of the process: a second
// server on the same store is refused, naming it, as JetStream would
// otherwise have two writers of the same files. A server that cannot
// start (JetStream refusing its store, say) is reported with its reason
// as soon as it gives up.
func Start(opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	so, err := serverOptions(opts)
	if err != nil {
		return nil, err
	}
	if !so.DontListen && so.Port > 0 {
		// Taken already: say so now (the server would fail inside its
		// own goroutine, and Start would only see it never got ready).
		ln, err := net.Listen("tcp", net.JoinHostPort(so.Host, strconv.Itoa(so.Port)))
		if err != nil {
			return nil, fmt.Errorf("embedded: listen address %q: %w", opts.Listen, err)
		}
		ln.Close()
	}
	s := &Server{}
	if so.StoreDir == "" {
		dir, err := os.MkdirTemp("", "toolbus-js-")
		if err != nil {
			return nil, fmt.Errorf("embedded: JetStream store: %w", err)
		}
		so.StoreDir, s.tempDir = dir, dir
	}
	if s.lock, err = lockStore(so.StoreDir); err != nil {
		s.removeTemp()
		return nil, err
	}
	ns, err := server.NewServer(so)
	if err != nil {
		s.release()
		return nil, fmt.Errorf("embedded: starting the server: %w", err)
	}
	if opts.Log {
		ns.ConfigureLogger()
	}
	// The server's fatal errors (JetStream refusing its store) end its
	// start: kept to say why, also when its log is off.
	fatal := &fatalLog{next: ns.Logger(), failed: make(chan struct{})}
	ns.SetLogger(fatal, opts.Log && so.Debug, opts.Log && so.Trace)
	s.ns = ns
	go ns.Start()
	wait := opts.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	ready := make(chan bool, 1)
	go func() { ready <- ns.ReadyForConnections(wait) }()
	var ok bool
	select {
	case ok = <-ready:
	case <-fatal.failed:
	}
	if !ok {
		ns.Shutdown()
		ns.WaitForShutdown()
		s.release()
		if why := fatal.reason(); why != "" {
			return nil, fmt.Errorf("embedded: the server did not start (JetStream store %s): %s", so.StoreDir, why)
		}
		return nil, errors.New("embedded: the server is not ready for connections")
	}
	return s, nil
}

// fatalLog passes the server's log on (to next, when there is one) and
// keeps its first fatal error.
type fatalLog struct {
	next   server.Logger
	mu     sync.Mutex
	first  string
	failed chan struct{} // closed at the first fatal error
}

func (l *fatalLog) reason() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	if l.first == "" {
		l.first = fmt.Sprintf(format, v...)
		close(l.failed)
	}
	l.mu.Unlock()
	// Not next's Fatalf: nats-server's logger exits the process there,
	// which is for its own binary, not a program embedding it.
	if l.next != nil {
		l.next.Errorf(format, v...)
	}
}

func (l *fatalLog) Noticef(format string, v ...any) {
	if l.next != nil {
		l.next.Noticef(format, v...)
	}
}

func (l *fatalLog) Warnf(format string, v ...any) {
	if l.next != nil {
		l.next.Warnf(format, v...)
	}
}

func (l *fatalLog) Errorf(format string, v ...any) {
	if l.next != nil {
		l.next.Errorf(format, v...)
	}
}

func (l *fatalLog) Debugf(format string, v ...any) {
	if l.next != nil {
		l.next.Debugf(format, v...)
	}
}

func (l *fatalLog) Tracef(format string, v ...any) {
	if l.next != nil {
		l.next.Tracef(format, v...)
	}
}

// Check reads opts the way Start does and returns what Start would
// refuse them for (an *ExposedError among them), starting nothing and
// opening no port; auth reports whether the server would admit only
// clients with credentials.
func Check(opts *Options) (auth bool, err error) {
	if opts == nil {
		opts = &Options{}
	}
	so, err := serverOptions(opts)
	if err != nil {
		return false, err
	}
	return authenticates(so), nil
}

// OffersTLS reports whether the server Start would start with opts
// offers its clients TLS: only a tls block in opts.ConfigFile gives it
// TLS. It starts nothing and opens no port; err is Check's.
func OffersTLS(opts *Options) (bool, error) {
	if opts == nil {
		opts = &Options{}
	}
	so, err := serverOptions(opts)
	if err != nil {
		return false, err
	}
	return so.TLSConfig != nil, nil
}

// FileDefaults reads a nats-server configuration file for what it says
// of the fields Options overrides: its client address ("host:port", with
// nats-server's default host 0.0.0.0 when it gives only a port, and port
// 0 for its random port -1) and its JetStream store directory; "" for
// what it does not say. A program that has its own defaults for Listen and
// StoreDir takes these over them, so that the file is not overridden by a
// default nobody chose.
func FileDefaults(file string) (listen, storeDir string, err error) {
	if err := serverconf.Check(file); err != nil {
		return "", "", fmt.Errorf("embedded: server configuration: %w", err)
	}
	so, err := server.ProcessConfigFile(file)
	if err != nil {
		return "", "", fmt.Errorf("embedded: server configuration: %w", err)
	}
	switch {
	case so.Port == server.RANDOM_PORT:
		listen = net.JoinHostPort(cmp.Or(so.Host, "0.0.0.0"), "0")
	case so.Port > 0:
		listen = net.JoinHostPort(cmp.Or(so.Host, "0.0.0.0"), strconv.Itoa(so.Port))
	}
	return listen, so.StoreDir, nil
}

// serverOptions are the nats-server options of opts, or why Start
// refuses them.
func serverOptions(opts *Options) (*server.Options, error) {
	so := &server.Options{}
	if opts.ConfigFile != "" {
		if err := serverconf.Check(opts.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded: server configuration: %w", err)
		}
		var err error
		if so, err = server.ProcessConfigFile(opts.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded: server configuration: %w", err)
		}
	}
	so.JetStream, so.NoLog, so.NoSigs = true, !opts.Log, true
	if opts.StoreDir != "" || so.StoreDir == "" {
		so.StoreDir = opts.StoreDir
	}
	if opts.MaxPayload != 0 {
		so.MaxPayload = opts.MaxPayload
	}
	if opts.Name != "" || so.ServerName == "" {
		so.ServerName = cmp.Or(opts.Name, "toolbus")
	}
	if opts.Listen == "" {
		so.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(opts.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded: listen address %q: %w", opts.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("embedded: listen address %q: bad port", opts.Listen)
		}
		if p == 0 {
			p = server.RANDOM_PORT
		}
		so.Host, so.Port = host, p
		if !loopback(host) && !authenticates(so) && !opts.Insecure {
			return nil, &ExposedError{Listener: "client", Addr: opts.Listen}
		}
	}
	if !opts.Insecure {
		if err := openListeners(so); err != nil {
			return nil, err
		}
	}
	return so, nil
}

// ExposedError is the refusal of a listener beyond loopback that would
// admit clients without authentication (Options.Insecure lifts it).
type ExposedError struct {
	// Listener is "client" (Options.Listen), or one the configuration
	// file opens: "websocket", "MQTT", "leaf node" or "cluster".
	Listener string
	// Addr is its address, host:port.
	Addr string
}

func (e *ExposedError) Error() string {
	if e.Listener == "client" {
		return fmt.Sprintf("embedded: refusing to listen on %s without authentication: whoever reaches it could call every tool and read every result; "+
			"give a server configuration with users (toolctl auth init writes one), listen on 127.0.0.1, or say insecure explicitly", e.Addr)
	}
	return fmt.Sprintf("embedded: refusing the %s listener on %s without authentication: whoever reaches it could use the whole bus; "+
		"give it authorization, bind it to 127.0.0.1, or say insecure explicitly", e.Listener, e.Addr)
}

// Connect opens a client connection: in-process when the server does not
// listen, over TCP otherwise.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if s.ClientURL() == "" {
		return nats.Connect("", append([]nats.Option{nats.InProcessServer(s.ns)}, opts...)...)
	}
	return nats.Connect(s.ClientURL(), opts...)
}

// ClientURL is the nats:// URL clients dial, or "" for an in-process only
// server.
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// NATS returns the underlying nats-server, for what this type does not
// cover.
func (s *Server) NATS() *server.Server { return s.ns }

// StoreDir is the JetStream store directory.
func (s *Server) StoreDir() string { return s.ns.StoreDir() }

// Shutdown stops the server and removes a temporary store directory.
// Close client connections first: shutting down under an active drain
// produces pipe errors. A second call, also one made at once from another
// goroutine, waits for the first and does nothing more.
func (s *Server) Shutdown() {
	s.shut.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.release()
	})
}

// release unlocks the store directory and removes a temporary one.
func (s *Server) release() {
	if s.lock != nil {
		s.lock.Close() // the lock goes with the descriptor
		s.lock = nil
	}
	s.removeTemp()
}

func (s *Server) removeTemp() {
	if s.tempDir != "" {
		os.RemoveAll(s.tempDir)
	}
}

// loopback reports whether host is a loopback name or address ("" and
// the unspecified addresses are every interface).
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authenticates reports whether the server options admit only known
// clients (a no_auth_user admits anyone, as that user).
func authenticates(o *server.Options) bool {
	return (len(o.Nkeys) > 0 || len(o.Users) > 0 || o.Authorization != "" || o.Username != "" ||
		len(o.TrustedOperators) > 0 || len(o.TrustedKeys) > 0 || o.AuthCallout != nil || o.CustomClientAuthentication != nil) &&
		o.NoAuthUser == ""
}

// openListeners refuses the other listeners a configuration file may open
// beyond loopback without authentication: websocket and MQTT clients and
// leaf nodes (the server's users, unless the listener has its own), and
// routes (their own authorization only), each a way onto the whole bus.
func openListeners(o *server.Options) error {
	open := func(what, host string, port int, auth bool) error {
		if port == 0 || loopback(host) || auth {
			return nil
		}
		return &ExposedError{Listener: what, Addr: net.JoinHostPort(cmp.Or(host, "0.0.0.0"), strconv.Itoa(port))}
	}
	ws, mq, leaf, route := o.Websocket, o.MQTT, o.LeafNode, o.Cluster
	return errors.Join(
		open("websocket", ws.Host, ws.Port, (authenticates(o) || ws.Username != "" || ws.Token != "") && ws.NoAuthUser == ""),
		open("MQTT", mq.Host, mq.Port, (authenticates(o) || mq.Username != "" || mq.Token != "") && mq.NoAuthUser == ""),
		open("leaf node", leaf.Host, leaf.Port, authenticates(o) || leaf.Username != "" || len(leaf.Users) > 0 || leaf.Nkey != "" || verifies(leaf.TLSConfig)),
		open("cluster", route.Host, route.Port, route.Username != "" || verifies(route.TLSConfig)))
}

// verifies reports a TLS configuration that admits only clients with a
// certificate it trusts.
func verifies(c *tls.Config) bool {
	return c != nil && c.ClientAuth == tls.RequireAndVerifyClientCert
}
