package main_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRollingRestart: a fleet of three workers restarted one after the
// other with SIGTERM (each replaced under its instance id once it has
// exited) while a client keeps calling, on the core path and the
// durable path, with kept results: every call gets exactly one final,
// and none fails: a drain with grace lets the running calls finish and
// the new ones go to the other workers.
func TestRollingRestart(t *testing.T) {
	s := natstest.Embedded(t, true)
	url := s.ClientURL()
	names := []string{"r0", "r1", "r2"}
	workers := make([]*worker, len(names))
	for i, n := range names {
		workers[i] = startWorker(t, "--nats", url, "--instance", n)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := bus.NewClient(nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	type outcome struct {
		kind   string
		finals int
		final  *toolkit.Response
	}
	var (
		mu    sync.Mutex
		all   []outcome
		stop  atomic.Bool
		wg    sync.WaitGroup
		count atomic.Int64
	)
	kinds := []string{"core", "durable", "kept", "durable-kept"}
	for g := range 8 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				kind := kinds[(g+i)%len(kinds)]
				call := toolkit.ToolCall{ID: fmt.Sprintf("c%d-%d", g, i), Name: "sleep", Input: map[string]any{"seconds": 0.2}}
				call.Durable = kind == "durable" || kind == "durable-kept"
				call.KeepResult = kind == "kept" || kind == "durable-kept"
				ctx, cancel := context.WithTimeout(context.Background(), 2*guard)
				o := outcome{kind: kind}
				for ev := range c.Call(ctx, call) {
					if ev.Final != nil {
						o.finals++
						o.final = ev.Final
					}
				}
				cancel()
				count.Add(1)
				mu.Lock()
				all = append(all, o)
				mu.Unlock()
			}
		})
	}
	waitCalls := func(n int64) {
		natstest.WaitFor(t, "calls to end", func() bool { return count.Load() >= n })
	}
	waitCalls(20)
	for i, n := range names {
		if code := workers[i].stop(t); code != 0 {
			t.Errorf("worker %s exit %d\n%s", n, code, workers[i].stderr)
		}
		waitCalls(count.Load() + 10)
		workers[i] = startWorker(t, "--nats", url, "--instance", n)
		waitCalls(count.Load() + 10)
	}
	stop.Store(true)
	wg.Wait()
	bad := map[string]int{}
	for _, o := range all {
		if o.finals != 1 {
			t.Errorf("a %s call got %d finals", o.kind, o.finals)
			continue
		}
		if o.final.State != toolkit.StateSuccess {
			bad[fmt.Sprintf("%s %s %s: %.120s", o.kind, o.final.Code, o.final.Metadata[wire.MetaWorker], o.final.Text())]++
		}
	}
	for k, n := range bad {
		t.Errorf("%d × %s", n, k)
	}
	t.Logf("%d calls", len(all))
}

// TestEmbeddedRestartKeepsState: a worker running the embedded server,
// killed with SIGKILL in the middle of a durable call and started again
// on the same address and store directory, finds the fleet's JetStream
// state again: the durable call (delivered again and run to the end for
// its caller, who reconnected), the sessions' groups and permission
// modes. (Kept results are in memory storage: they do not survive a
// restart of the only server, as subjects.md says.)
func TestEmbeddedRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "w.yaml")
	mustWrite(t, conf, "groups:\n  - name: research\n    description: Web research.\npermissions:\n  mode: default\ndurable:\n  ack_wait: 2s\n")
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	args := []string{"--config", conf, "--listen", addr, "--store-dir", filepath.Join(dir, "js")}
	w := startWorker(t, args...)
	for _, a := range [][]string{{"groups", "set", "--session", "s1", "research"}, {"mode", "--session", "s1", "accept_edits"}} {
		if out, se, code := toolctl(t, w.url, a...); code != 0 {
			t.Fatalf("toolctl %v: exit %d\n%s%s", a, code, out, se)
		}
	}
	nc, err := nats.Connect(w.url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := bus.NewClient(nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*guard)
	defer cancel()
	final := durableSleepStarted(t, ctx, c, 2, true)
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.exit(t)
	w = startWorker(t, args...)
	select {
	case r := <-final:
		if r == nil || r.State != toolkit.StateSuccess {
			t.Errorf("the durable call across the restart ended %+v", r)
		}
	case <-time.After(2 * guard):
		t.Fatal("the durable call got no final")
	}
	if out, se, code := toolctl(t, w.url, "groups", "--session", "s1"); code != 0 || !strings.Contains(out, "research") {
		t.Errorf("groups of s1 after the restart: exit %d\n%s%s", code, out, se)
	}
	if out, se, code := toolctl(t, w.url, "mode", "--session", "s1"); code != 0 || !strings.Contains(out, "accept_edits") {
		t.Errorf("mode of s1 after the restart: exit %d\n%s%s", code, out, se)
	}
	if code := w.stop(t); code != 0 {
		t.Errorf("exit %d\n%s", code, w.stderr)
	}
}

// TestDurableFinalAcrossHostRestart: a fleet on the embedded server of
// one worker (the host); the host is killed and started again on its
// address and store while another worker runs a durable call. The call
// ends while its caller is still reconnecting, so the frame with its
// final is lost, and the final the worker kept is lost too: the results
// bucket (memory storage) was not there yet on the restarted server. The
// queue, which has the call acknowledged, never delivers it again. The
// caller waited for its deadline (for ever without one); it now ends the
// call worker_lost once the consumer's ack floor has passed the call. The
// same for a call sent on the core path that its worker queued (durable
// by default): the queued frame tells the caller the call's sequence.
func TestDurableFinalAcrossHostRestart(t *testing.T) {
	for _, queuedBy := range []string{"client", "worker"} {
		t.Run("queued by "+queuedBy, func(t *testing.T) { durableFinalAcrossHostRestart(t, queuedBy == "client") })
	}
}

func durableFinalAcrossHostRestart(t *testing.T, clientQueued bool) {
	dir := t.TempDir()
	var b strings.Builder
	// The host serves echo only, and takes a few seconds to start: its
	// groups.
	b.WriteString("builtins:\n  tools: [{name: echo}]\ngroups:\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "  - name: g%d\n    description: group %d\n", i, i)
	}
	hostConf := filepath.Join(dir, "host.yaml")
	mustWrite(t, hostConf, b.String())
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	hostArgs := []string{"--config", hostConf, "--listen", addr, "--store-dir", filepath.Join(dir, "js"), "--instance", "host"}
	host := startWorker(t, hostArgs...)
	w1Args := []string{"--nats", host.url, "--instance", "w1"}
	if !clientQueued {
		w1Conf := filepath.Join(dir, "w1.yaml")
		mustWrite(t, w1Conf, "durable:\n  tools: [sleep]\n")
		w1Args = append(w1Args, "--config", w1Conf)
	}
	startWorker(t, w1Args...)

	nc, err := nats.Connect(host.url, nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := bus.NewClient(nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	final := durableSleepStarted(t, ctx, c, 3, clientQueued)
	if err := host.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.exit(t)
	startWorker(t, hostArgs...)
	r := <-final
	t.Logf("final: %s %s %s", r.State, r.Code, r.Text())
	if r.Code == toolkit.CodeTimeout || r.Code == toolkit.CodeInterrupted {
		t.Errorf("the durable call waited for its caller's deadline: %s %s", r.Code, r.Text())
	}
}

// durableSleepStarted calls the durable sleep tool (id d1) for seconds
// under ctx (durable: on the durable path, else the core path, which the
// worker may queue) and returns once its first progress report came, a
// worker running it; the call's final comes on the channel returned.
func durableSleepStarted(t *testing.T, ctx context.Context, c *bus.Client, seconds float64, durable bool) <-chan *toolkit.Response {
	t.Helper()
	progress := make(chan struct{}, 1)
	final := make(chan *toolkit.Response, 1)
	go func() {
		var last *toolkit.Response
		for ev := range c.Call(ctx, toolkit.ToolCall{ID: "d1", Name: "sleep", Durable: durable, Input: map[string]any{"seconds": seconds}}) {
			if ev.Progress != nil {
				select {
				case progress <- struct{}{}:
				default:
				}
			}
			if ev.Final != nil {
				last = ev.Final
			}
		}
		final <- last
	}()
	select {
	case <-progress:
	case <-time.After(guard):
		t.Fatal("the durable call did not start")
	}
	return final
}
