package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/toolkit"
)

// env is the topology one run measures: a server (embedded or external),
// a fleet of worker hosts, and the caller's connection.
type env struct {
	cfg    *config
	srv    *embedded.Server // nil with --nats
	url    string           // "" for in-process
	caller *nats.Conn
	client *bus.Client
	fleet  fleet
	mcpURL string
	audit  *auditor // nil without --audit
	auditC *nats.Conn
	// lost is closed when the caller's connection is closed for good
	// while the run uses it (the server gone longer than its reconnect
	// attempts); closing is set once the run closes it itself.
	lost    chan struct{}
	closing atomic.Bool
	// exited gets the first worker process that ended without the
	// bench ending it (crashed, killed by someone else): the fleet the
	// run measures is no longer the one it reports.
	exited chan error
}

// fleet is the set of worker hosts. resize starts or stops hosts; the
// first host also serves MCP.
type fleet interface {
	resize(ctx context.Context, n int) error
	size() int
	// pids are the worker processes, or nil when the workers run in this
	// process (their CPU is then the process's).
	pids() []int
	mcpURL() string
	close()
}

func newEnv(ctx context.Context, cfg *config) (_ *env, err error) {
	e := &env{cfg: cfg, lost: make(chan struct{}), exited: make(chan error, 1)}
	defer func() { // e, not the result: a failure returns nil
		if err != nil {
			e.close()
		}
	}()
	switch {
	case cfg.natsURL != "":
		e.url = cfg.natsURL
	default:
		so := &embedded.Options{MaxPayload: cfg.maxPayload}
		if cfg.transport == "tcp" || cfg.workers > 0 {
			so.Listen = "127.0.0.1:0"
		}
		if e.srv, err = embedded.Start(so); err != nil {
			return nil, err
		}
		e.url = e.srv.ClientURL()
	}
	prefix := newInboxPrefix()
	closed := nats.ClosedHandler(func(*nats.Conn) {
		if !e.closing.Load() {
			close(e.lost)
		}
	})
	if e.caller, err = e.connect(nats.CustomInboxPrefix(prefix), closed); err != nil {
		return nil, fmt.Errorf("connecting the caller: %w", err)
	}
	if cfg.audit {
		if e.auditC, err = e.connect(); err != nil {
			return nil, fmt.Errorf("connecting the auditor: %w", err)
		}
		if e.audit, err = newAuditor(e.auditC, prefix); err != nil {
			return nil, err
		}
	}
	if e.client, err = bus.NewClient(e.caller, &bus.ClientOptions{StallTimeout: cfg.stall}); err != nil {
		return nil, err
	}
	switch {
	case cfg.workers > 0:
		e.fleet = &procFleet{env: e}
	case cfg.natsURL != "":
		e.fleet = externalFleet{}
	default:
		e.fleet = &localFleet{env: e}
	}
	n := max(cfg.workers, 1)
	if err := e.fleet.resize(ctx, n); err != nil {
		return nil, err
	}
	if _, ok := e.fleet.(externalFleet); ok {
		// Workers started separately may not be there: every call would
		// then end unavailable, at once, as fast as the callers go.
		if _, err := e.caller.Request(rawEcho, nil, cfg.stall); errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("no bench worker on %s: start one with \"bench worker --nats %s\", or give --workers N", cfg.natsURL, cfg.natsURL)
		} else if err != nil {
			return nil, fmt.Errorf("asking for a bench worker on %s: %w", cfg.natsURL, err)
		}
	}
	e.mcpURL = cmp.Or(cfg.mcpURL, e.fleet.mcpURL())
	return e, nil
}

func (e *env) connect(extra ...nats.Option) (*nats.Conn, error) {
	opts := append([]nats.Option{nats.Name("toolbus-bench")}, extra...)
	if e.srv != nil {
		return e.srv.Connect(opts...)
	}
	return nats.Connect(e.url, append(opts, testConnOptions...)...)
}

// call starts a toolbus call, registering it with the auditor first and
// telling it when the client's final says the call failed.
func (e *env) call(ctx context.Context, tc toolkit.ToolCall) iter.Seq[toolkit.Event] {
	return e.callOn(ctx, e.client, tc)
}

// callOn is call through c, a client of e.caller other than e.client
// (the fault scenario's, with their own retries): audited as well.
func (e *env) callOn(ctx context.Context, c *bus.Client, tc toolkit.ToolCall) iter.Seq[toolkit.Event] {
	if e.audit == nil {
		return c.Call(ctx, tc)
	}
	e.audit.expect(tc.ID)
	events := c.Call(ctx, tc)
	return func(yield func(toolkit.Event) bool) {
		failed := true // no final at all: no_final
		defer func() {
			if failed {
				e.audit.failed(tc.ID)
			}
		}()
		for ev := range events {
			if ev.Final != nil {
				failed = ev.Final.State != toolkit.StateSuccess
			}
			if !yield(ev) {
				return
			}
		}
	}
}

func (e *env) close() {
	e.closing.Store(true)
	if e.fleet != nil {
		e.fleet.close()
	}
	if e.client != nil {
		e.client.Close()
	}
	if e.caller != nil {
		e.caller.Close()
	}
	if e.auditC != nil {
		e.auditC.Close()
	}
	if e.srv != nil {
		e.srv.Shutdown()
	}
}

// localFleet runs worker hosts in this process, each on its own
// connection.
type localFleet struct {
	env   *env
	hosts []*host
}

func (f *localFleet) resize(ctx context.Context, n int) error {
	for len(f.hosts) > n {
		h := f.hosts[len(f.hosts)-1]
		f.hosts = f.hosts[:len(f.hosts)-1]
		h.stop(ctx)
		h.nc.Close()
	}
	for len(f.hosts) < n {
		nc, err := f.env.connect()
		if err != nil {
			return fmt.Errorf("connecting a worker: %w", err)
		}
		o := hostOptions{slots: f.env.cfg.slots, ackWait: f.env.cfg.ackWait}
		if len(f.hosts) == 0 && f.env.cfg.mcpURL == "" {
			o.mcpListen = "127.0.0.1:0"
		}
		h, err := startHost(ctx, nc, o)
		if err != nil {
			nc.Close()
			return fmt.Errorf("starting a worker: %w", err)
		}
		f.hosts = append(f.hosts, h)
	}
	return nil
}

func (f *localFleet) size() int   { return len(f.hosts) }
func (f *localFleet) pids() []int { return nil }

func (f *localFleet) mcpURL() string {
	if len(f.hosts) == 0 {
		return ""
	}
	return f.hosts[0].mcpURL
}

func (f *localFleet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f.resize(ctx, 0)
}

// externalFleet is a fleet started by someone else (--nats without
// --workers): it cannot be resized.
type externalFleet struct{}

func (externalFleet) resize(context.Context, int) error { return nil }
func (externalFleet) size() int                         { return 0 }
func (externalFleet) pids() []int                       { return nil }
func (externalFleet) mcpURL() string                    { return "" }
func (externalFleet) close()                            {}

// procFleet runs each worker host as a child process: this binary
// re-executed in worker mode.
type procFleet struct {
	env   *env
	mu    sync.Mutex // procs, replaced under the fault scenario
	procs []*workerProc
}

// killOne kills a random worker process (SIGKILL: no drain, no goodbye)
// and starts another in its place.
func (f *procFleet) killOne(ctx context.Context) error {
	f.mu.Lock()
	if len(f.procs) == 0 {
		f.mu.Unlock()
		return nil
	}
	i := rand.IntN(len(f.procs))
	p := f.procs[i]
	f.mu.Unlock()
	p.stopping.Store(true)
	p.cmd.Process.Kill()
	<-p.done
	// The replacement is waited for even when the faults stop meanwhile
	// (the round ended): given up half-started, the fleet kept the killed
	// worker in its place and ran on one worker short, so the next kill
	// could leave none (calls then ended unavailable).
	np, err := f.start(context.WithoutCancel(ctx), false)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.procs[i] = np
	f.mu.Unlock()
	return nil
}

type workerProc struct {
	cmd    *exec.Cmd
	mcpURL string
	done   chan struct{} // closed once it has exited and been waited for
	stderr *tail
	// up is set once it said ready; stopping once the bench ends it
	// (stop, a fault): an exit of a worker up and not stopping is a
	// loss the run must hear of.
	up, stopping atomic.Bool
}

// start starts a worker process of the fleet; its unexpected exit is
// sent on the env's exited.
func (f *procFleet) start(ctx context.Context, withMCP bool) (*workerProc, error) {
	return startWorkerProc(ctx, f.env.url, f.env.cfg.slots, f.env.cfg.ackWait, withMCP, func(err error) {
		select {
		case f.env.exited <- err:
		default: // the run heard of one already
		}
	})
}

func (f *procFleet) resize(ctx context.Context, n int) error {
	for len(f.procs) > n {
		p := f.procs[len(f.procs)-1]
		f.procs = f.procs[:len(f.procs)-1]
		p.stop()
	}
	for len(f.procs) < n {
		p, err := f.start(ctx, len(f.procs) == 0 && f.env.cfg.mcpURL == "")
		if err != nil {
			return err
		}
		f.procs = append(f.procs, p)
	}
	return nil
}

func (f *procFleet) size() int { return len(f.procs) }

func (f *procFleet) pids() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ps []int
	for _, p := range f.procs {
		ps = append(ps, p.cmd.Process.Pid)
	}
	return ps
}

func (f *procFleet) mcpURL() string {
	if len(f.procs) == 0 {
		return ""
	}
	return f.procs[0].mcpURL
}

func (f *procFleet) close() {
	var wg sync.WaitGroup
	for _, p := range f.procs {
		wg.Go(p.stop)
	}
	wg.Wait()
	f.procs = nil
}

// workerEnv marks a re-executed bench binary as a worker; tests re-execute
// the test binary the same way.
const workerEnv = "TOOLBUS_BENCH_WORKER"

// startWorkerProc starts a worker process and waits for it to be ready.
// exited, if not nil, is called with a *workerExit if the process ends
// after that without stop or a fault ending it.
func startWorkerProc(ctx context.Context, url string, slots int, ackWait time.Duration, withMCP bool, exited func(error)) (*workerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the bench binary to start workers: %w", err)
	}
	args := []string{"worker", "--nats", url, "--slots", strconv.Itoa(slots), "--ack-wait", ackWait.String()}
	if withMCP {
		args = append(args, "--mcp-listen", "127.0.0.1:0")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	p := &workerProc{cmd: cmd, done: make(chan struct{}), stderr: &tail{w: os.Stderr}}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = childAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a worker process: %w", err)
	}
	go func() {
		cmd.Wait()
		close(p.done)
		if exited != nil && p.up.Load() && !p.stopping.Load() {
			exited(p.exit())
		}
	}()
	ready := make(chan error, 1)
	go func() {
		r := bufio.NewReader(out)
		line, err := r.ReadString('\n')
		if err != nil {
			<-p.done
			ready <- fmt.Errorf("a worker process ended before it was ready: %w", p.exit())
			return
		}
		f := strings.Fields(line)
		if len(f) < 1 || f[0] != "ready" {
			ready <- fmt.Errorf("worker process said %q instead of ready", strings.TrimSpace(line))
			return
		}
		if len(f) > 1 {
			p.mcpURL = f[1]
		}
		p.up.Store(true)
		ready <- nil
		io.Copy(io.Discard, r)
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(30 * time.Second):
		err = errors.New("worker process not ready after 30s")
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// stop asks the worker to drain (SIGTERM) and kills it if it has not
// exited after 5s.
func (p *workerProc) stop() {
	p.stopping.Store(true)
	p.cmd.Process.Signal(terminate)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// workerExit is a worker process that ended: which one, how, and what it
// said last on stderr.
type workerExit struct {
	pid  int
	how  string // "exit status 1", "signal: killed"
	last []string
}

func (w *workerExit) Error() string {
	msg := fmt.Sprintf("worker process %d ended (%s)", w.pid, w.how)
	if len(w.last) == 0 {
		return msg + ", nothing on its stderr"
	}
	return msg + "; its last lines on stderr:\n\t" + strings.Join(w.last, "\n\t")
}

// exit describes p, which has exited (p.done is closed).
func (p *workerProc) exit() *workerExit {
	return &workerExit{pid: p.cmd.Process.Pid, how: p.cmd.ProcessState.String(), last: p.stderr.lines(5)}
}

// tail passes a worker's stderr on to w and keeps its last few KiB, to
// say what the worker said before it ended.
type tail struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 4 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	t.mu.Unlock()
	return t.w.Write(b)
}

// lines returns the last n non-empty lines written.
func (t *tail) lines(n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for l := range strings.Lines(string(t.buf)) {
		if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out[max(len(out)-n, 0):]
}
