// Package natstest starts real NATS servers for the tests of every
// package: a single JetStream server in process, a 3-node JetStream
// cluster on loopback, and connections to them, each cleaned up when the
// test ends. Tests never use a fake bus.
package natstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/embedded"
)

// Server starts a single in-process nats-server with JetStream and
// no listener; it is shut down when the test ends.
func Server(t testing.TB) *server.Server {
	t.Helper()
	return ServerWith(t, nil)
}

// ServerWith is Server with adjusted options.
func ServerWith(t testing.TB, adjust func(*server.Options)) *server.Server {
	t.Helper()
	opts := &server.Options{
		ServerName: "kvtest",
		DontListen: true,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		NoLog:      true,
		NoSigs:     true,
	}
	if adjust != nil {
		adjust(opts)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("starting nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Conn connects in-process to s; the connection is closed when the
// test ends (before the server shuts down).
func Conn(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s), nats.Timeout(connectTimeout))
	if err != nil {
		t.Fatalf("connecting in-process: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// URLConn connects over TCP; closed when the test ends.
func URLConn(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.Timeout(connectTimeout))
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JS is JetStream on nc.
func JS(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return js
}

// Cluster starts a 3-node JetStream cluster on loopback (random
// client ports, free cluster ports; DontListen nodes cannot route) and
// waits until the nodes route to each other and follow a JetStream meta
// leader.
func Cluster(t testing.TB) []*server.Server {
	t.Helper()
	return NewCluster(t).Nodes()
}

// TestCluster is a 3-node JetStream cluster on loopback ports whose nodes
// can be stopped and started again (same name, ports and store), as a
// node restart.
type TestCluster struct {
	t     testing.TB
	opts  []*server.Options
	mu    sync.Mutex
	nodes []*server.Server
}

// NewCluster starts a 3-node cluster and waits for its full route mesh
// and a JetStream meta leader every node follows. Nodes stop with the
// test.
//
// Its ports are picked free below the kernel's ephemeral range
// (clusterPort), where outgoing connections do not take them; should one
// be taken anyway before its node listens (another test process), the
// cluster is started again on new ports.
func NewCluster(t testing.TB) *TestCluster {
	t.Helper()
	c := &TestCluster{t: t}
	// The test's temporary directories are removed by a cleanup made at
	// its first TempDir: made before the nodes' stop, it runs after it,
	// not while a node still writes its store there.
	t.TempDir()
	t.Cleanup(func() {
		for i := range c.nodes {
			c.Stop(i)
		}
	})
	for attempt := 1; ; attempt++ {
		c.configure()
		err := c.startAll()
		if err == nil {
			break
		}
		for i := range c.nodes {
			c.Stop(i)
		}
		if attempt == 3 {
			t.Fatalf("starting the cluster: %v", err)
		}
	}
	c.WaitReady()
	return c
}

// configure picks the nodes' ports and options afresh.
func (c *TestCluster) configure() {
	routes := make([]*url.URL, 3)
	clientPorts := make([]int, 3)
	for i := range routes {
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", clusterPort(c.t))}
		clientPorts[i] = clusterPort(c.t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts = nil
	for i := range routes {
		port, _ := strconv.Atoi(routes[i].Port())
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       clientPorts[i],
			JetStream:  true,
			StoreDir:   c.t.TempDir(),
			Cluster:    server.ClusterOpts{Name: "kvtest", Host: "127.0.0.1", Port: port},
			Routes:     routes,
			NoLog:      true,
			NoSigs:     true,
		})
	}
	c.nodes = make([]*server.Server, 3)
}

// startAll starts every node.
func (c *TestCluster) startAll() error {
	for i := range 3 {
		if err := c.start(i); err != nil {
			return err
		}
	}
	return nil
}

// clusterPort returns a loopback port below the ephemeral range (32768
// and up on Linux) that was free a moment ago.
func clusterPort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	return FreePort(t)
}

// Nodes returns the running nodes (a stopped one is nil).
func (c *TestCluster) Nodes() []*server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// URLs is every node's client URL, comma-separated, as nats.Connect takes
// them.
func (c *TestCluster) URLs() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

// Stop shuts node i down (no-op when it is down).
func (c *TestCluster) Stop(i int) {
	c.mu.Lock()
	s := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// LoseQuorum stops every node but one that has clients (the first node
// when none has), so the cluster has no meta leader and no stream a
// leader for the moment, while its clients stay connected; restore
// starts the stopped nodes again.
func (c *TestCluster) LoseQuorum() (restore func()) {
	c.t.Helper()
	nodes := c.Nodes()
	kept := 0
	for i, s := range nodes {
		if s != nil && s.NumClients() > 0 {
			kept = i
			break
		}
	}
	for i := range nodes {
		if i != kept {
			c.Stop(i)
		}
	}
	return func() {
		c.t.Helper()
		for i := range nodes {
			if i != kept {
				c.Start(i)
			}
		}
	}
}

// LoneStreamLeader waits for stream (of account $G) to have a leader,
// stops every other node, and returns a connection to the leader: it
// leads on without a quorum for a while, taking proposals it cannot
// commit (a write it is given stays in process).
func (c *TestCluster) LoneStreamLeader(stream string) *nats.Conn {
	c.t.Helper()
	leader := -1
	WaitFor(c.t, "a leader of "+stream, func() bool {
		for i, s := range c.Nodes() {
			if s != nil && s.JetStreamIsStreamLeader("$G", stream) {
				leader = i
				return true
			}
		}
		return false
	})
	nc := URLConn(c.t, c.Nodes()[leader].ClientURL())
	for i := range c.Nodes() {
		if i != leader {
			c.Stop(i)
		}
	}
	return nc
}

// LoneLastSeq is the last sequence of stream in the store of the one
// node LoneStreamLeader left running, read from the node itself: a leader
// left without its quorum steps down after a while, and then no one
// answers a read through the JetStream API.
func (c *TestCluster) LoneLastSeq(stream string) uint64 {
	c.t.Helper()
	for _, s := range c.Nodes() {
		if s == nil {
			continue
		}
		a, err := s.JszAccount(&server.JSzOptions{Account: "$G", Streams: true})
		if err != nil {
			c.t.Fatalf("reading the node's streams: %v", err)
		}
		for _, d := range a.Streams {
			if d.Name == stream {
				return d.State.LastSeq
			}
		}
		c.t.Fatalf("the node has no stream %s", stream)
	}
	c.t.Fatal("no node runs")
	return 0
}

// Start starts node i again with its options (no-op when it runs).
func (c *TestCluster) Start(i int) {
	c.t.Helper()
	if err := c.start(i); err != nil {
		c.t.Fatal(err)
	}
}

func (c *TestCluster) start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[i] != nil {
		return nil
	}
	o := *c.opts[i]
	s, err := server.NewServer(&o)
	if err != nil {
		return fmt.Errorf("starting node %d: %v", i+1, err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("node %d not ready (ports %d, %d)", i+1, o.Port, o.Cluster.Port)
	}
	c.nodes[i] = s
	return nil
}

// WaitReady waits for a full route mesh among the running nodes and a
// JetStream meta leader they all follow, which knows them all online.
func (c *TestCluster) WaitReady() {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// A full mesh (each node routes to the others, so a node knows
		// every subscription of the others), and a JetStream meta leader
		// every node follows.
		nodes := slices.DeleteFunc(c.Nodes(), func(s *server.Server) bool { return s == nil })
		leader := false
		current := true
		for _, s := range nodes {
			// The leader places streams only on peers it has had stats
			// from ("no suitable peers for placement, peer offline"
			// otherwise): it must have them from every node.
			leader = leader || s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == len(nodes)
			current = current && s.JetStreamIsCurrent() && s.NumRemotes() == len(nodes)-1
		}
		if leader && current {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("no JetStream meta leader after 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Ctx is a "never hangs" guard for one test.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Embedded starts the embedded server package's server with its own store
// directory, in process only, or on a random loopback port with tcp.
func Embedded(t testing.TB, tcp bool) *embedded.Server {
	t.Helper()
	opts := &embedded.Options{StoreDir: t.TempDir()}
	if tcp {
		opts.Listen = "127.0.0.1:0"
	}
	s, err := embedded.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// connectTimeout bounds a test connection's handshake: 10s, not
// nats.go's 2s, which a loaded machine (the whole suite beside a bench)
// went past ("read pipe: i/o timeout"), which no test is about.
const connectTimeout = 10 * time.Second

// Connect connects to an embedded server; closed when the test ends.
func Connect(t testing.TB, s *embedded.Server) *nats.Conn {
	t.Helper()
	nc, err := s.Connect(nats.Timeout(connectTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Guard bounds every wait of a test: it only keeps a broken bus from
// hanging the run, it asserts nothing about speed.
const Guard = 30 * time.Second

// WaitFor polls cond until it holds, failing the test after Guard.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Buffer is a bytes.Buffer safe for concurrent writes: where a test's
// logger writes from several goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Proxy forwards TCP connections to a NATS server. Cut closes every
// connection and refuses new ones until Restore: a client's link breaks
// for a while, as on a node restart or a network blip, while the server
// and everyone else stay up. Pause stops forwarding without closing
// anything until Resume: a frozen or cut-off process whose subscriptions
// stay on the server.
type Proxy struct {
	ln     net.Listener
	target string
	gate   sync.RWMutex // held by Pause
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

// NewProxy listens on a loopback port and forwards to target (host:port);
// it is closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.accept()
	return p
}

// ProxyTo is a Proxy (NewProxy) in front of s, which listens on TCP: an
// embedded server started with tcp (Embedded), or a cluster's node.
func ProxyTo(t testing.TB, s interface{ ClientURL() string }) *Proxy {
	t.Helper()
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	return NewProxy(t, u.Host)
}

// URL is the proxy's nats:// address.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Conn connects through p, reconnecting for ever every 50 ms after a
// Cut (opts come after those and may change them); the connection is
// closed when the test ends.
func (p *Proxy) Conn(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(p.URL(), append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(s, c)
		go p.pipe(c, s)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate.RLock()
			_, werr := dst.Write(buf[:n])
			p.gate.RUnlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Pause stops forwarding in both directions; nothing is closed.
func (p *Proxy) Pause() { p.gate.Lock() }

// Resume forwards again after Pause.
func (p *Proxy) Resume() { p.gate.Unlock() }

// Cut closes the forwarded connections and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// Stepdowns asks stream's leader to step down through nc every 100 ms
// until stop is called, which returns how many stepdowns the cluster
// took. It stops with the test at the latest. Name a test using it
// Test…ThroughLeaderStepdowns: scripts/test runs those apart, without
// the race detector, which reports a race inside nats-server itself
// after elections now and then (v2.15.2 and v2.15.3).
func Stepdowns(t testing.TB, nc *nats.Conn, stream string) (stop func() int) {
	done, stopped := make(chan struct{}), make(chan int, 1)
	go func() {
		n := 0
		defer func() { stopped <- n }()
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 5*time.Second); err == nil {
				n++
			}
		}
	}()
	var once sync.Once
	n := 0
	stop = func() int {
		once.Do(func() { close(done); n = <-stopped })
		return n
	}
	t.Cleanup(func() { stop() })
	return stop
}

// errCodeStreamCreate is JetStream's error code for a stream it could
// not make (JSStreamCreateErrF).
const errCodeStreamCreate = 10049

// CreateAfterDelete makes a stream or bucket (create) just after one was
// deleted. The server may refuse to make the stream's store for a moment
// on a loaded machine (10049, "error creating store for stream"; seen in
// loaded runs right after a delete): made again, it is not what a test
// tests (the workers' own makings of their buckets retry).
func CreateAfterDelete(ctx context.Context, t testing.TB, create func() error) {
	t.Helper()
	for {
		err := create()
		if err == nil {
			return
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeStreamCreate || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// HTTPGet GETs url, waiting 10 s at most: the status and body, or 0 and
// the error's text.
func HTTPGet(url string) (int, string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// WaitReplicated waits, within ctx, until the cluster js speaks to
// places a stream of three replicas: its meta leader may still be
// settling when the nodes are up, and what a test starts next (a
// gateway, a login) may try to make its bucket once.
func WaitReplicated(ctx context.Context, t testing.TB, js jetstream.JetStream) {
	t.Helper()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := js.CreateStream(cctx, jetstream.StreamConfig{Name: "probe", Subjects: []string{"probe"}, Replicas: 3, Storage: jetstream.MemoryStorage})
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no stream of 3 replicas placed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := js.DeleteStream(ctx, "probe"); err != nil {
		t.Fatal(err)
	}
}
