package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestHangupStopsGracefully: SIGHUP (the terminal a worker was started
// from closes, or an operator who expects a reload) stops the worker as
// SIGTERM does: the running call finishes within the grace period and
// gets its final, and the worker exits 0. Go's default for SIGHUP killed
// the worker at once: its calls were lost.
func TestHangupStopsGracefully(t *testing.T) {
	w := startWorker(t) // grace 30s
	call := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":2}`)
	if _, ok := call.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress:\n%s", call.stderr)
	}
	if err := w.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := call.exit(t); code != 0 {
		t.Errorf("the running call: toolctl exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, call.stdout, call.stderr)
	}
	if code := w.exit(t); code != 0 {
		t.Errorf("worker exit %d after SIGHUP, want 0 (a graceful stop)\n%s", code, w.stderr)
	}
	if !strings.Contains(w.stderr.String(), `"signal":"hangup"`) {
		t.Errorf("the worker did not log draining on SIGHUP:\n%s", w.stderr)
	}
	// JSON logs give durations in seconds, the grace period too.
	if !strings.Contains(w.stderr.String(), `"grace":30}`) {
		t.Errorf("the draining line does not give the grace period in seconds:\n%s", w.stderr)
	}
}

// TestLogReaderGone: the reader of the worker's log (a pipe to a log
// shipper, `worker 2>&1 | tee`) goes away. The worker goes on serving,
// its log lines lost, and a stop is still graceful. Go's default for a
// write to a broken pipe on stderr is to die of SIGPIPE: the next log
// line killed the worker, and the calls it was running were lost.
func TestLogReaderGone(t *testing.T) {
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(workerBin, "--log-format", "json", "--listen", "127.0.0.1:0", "--store-dir", filepath.Join(t.TempDir(), "js"))
	cmd.Env = cleanEnv(t)
	cmd.Stderr = wr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	url := ""
	for url == "" && sc.Scan() {
		var ready struct {
			Msg  string `json:"msg"`
			NATS string `json:"nats"`
		}
		if json.Unmarshal(sc.Bytes(), &ready) == nil && ready.Msg == "toolbus worker ready" {
			url = ready.NATS
		}
	}
	if url == "" {
		t.Fatal("no ready line")
	}
	r.Close() // the log's reader is gone
	call := startProc(t, cleanEnv(t), toolctlBin, "--nats", url, "call", "sleep", `{"seconds":2}`)
	// Each echo logs a line, into the broken pipe.
	for i := range 3 {
		if out, errOut, code := toolctl(t, url, "call", "echo", `{"text":"hi"}`); code != 0 {
			t.Fatalf("echo %d after the log's reader went away: exit %d, stdout %q, stderr %q", i, code, out, errOut)
		}
	}
	if code := call.exit(t); code != 0 {
		t.Errorf("the sleep call running meanwhile: exit %d\nstdout:\n%s\nstderr:\n%s", code, call.stdout, call.stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("worker after SIGTERM: %v, want exit 0", waitErr)
		}
	case <-time.After(guard):
		t.Fatal("the worker did not stop")
	}
}

// TestSecondWorkerOnOneMachine: a second worker on the machine of a
// running one, with the default store, is told what a second embedded
// server needs, whether its address is the first one's (the default
// 127.0.0.1:4222 of both) or another (--listen alone, which the
// address's message once said was enough, and then failed on the store).
func TestSecondWorkerOnOneMachine(t *testing.T) {
	data := t.TempDir() // the default store of both: XDG_DATA_HOME/toolbus/jetstream
	env := cleanEnv(t, "XDG_DATA_HOME="+data)
	first := ready(t, startProc(t, env, workerBin, "--log-format", "json", "--listen", "127.0.0.1:0"), nil)
	addr := strings.TrimPrefix(first.url, "nats://")
	for _, tc := range []struct{ name, listen, says string }{
		{"same address", addr, "cannot listen on " + addr},
		{"another address", "127.0.0.1:0", "is in use by another server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second := startProc(t, env, workerBin, "--listen", tc.listen)
			code := second.exit(t)
			msg := second.stderr.String()
			if code != 1 || !strings.Contains(msg, tc.says) || !strings.Contains(msg, "--store-dir") || !strings.Contains(msg, "--nats") {
				t.Errorf("exit %d, want 1 saying %q and naming --store-dir and --nats:\n%s", code, tc.says, msg)
			}
		})
	}
	if code := first.stop(t); code != 0 {
		t.Errorf("exit %d\n%s", code, first.stderr)
	}
}

// TestStoreDirOfALiveWorker: a second worker given the store directory
// of a running one (a second --listen on one machine keeps the default
// store) fails at once, saying the store is in use, where it started a
// second JetStream writing the same files. A worker killed with SIGKILL
// leaves no lock: its replacement starts on the same store and serves
// durable calls from it.
func TestStoreDirOfALiveWorker(t *testing.T) {
	store := filepath.Join(t.TempDir(), "js")
	first := startWorker(t, "--listen", "127.0.0.1:0", "--store-dir", store)
	second := startProc(t, cleanEnv(t), workerBin, "--log-format", "json", "--listen", "127.0.0.1:0", "--store-dir", store)
	if code := second.exit(t); code != 1 || !strings.Contains(second.stderr.String(), "is in use by another server") {
		t.Fatalf("a second worker on a live worker's store: exit %d, want 1 saying the store is in use\n%s", code, second.stderr)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.exit(t)
	again := startWorker(t, "--listen", "127.0.0.1:0", "--store-dir", store)
	if out, errOut, code := toolctl(t, again.url, "call", "--durable", "echo", `{"text":"after the kill"}`); code != 0 || !strings.Contains(out, "after the kill") {
		t.Errorf("a durable call on the restarted worker: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code := again.stop(t); code != 0 {
		t.Errorf("exit %d\n%s", code, again.stderr)
	}
}

// TestStoreUnusableFailsFast: a store directory JetStream cannot use
// (its jetstream directory is a file here) stops the start with the
// server's reason, without waiting out the server's ready timeout. It
// said "the server is not ready for connections" after 10s.
func TestStoreUnusableFailsFast(t *testing.T) {
	store := t.TempDir()
	mustWrite(t, filepath.Join(store, "jetstream"), "")
	p := startProc(t, cleanEnv(t), workerBin, "--listen", "127.0.0.1:0", "--store-dir", store)
	if code := p.exit(t); code != 1 || !strings.Contains(p.stderr.String(), "Can't start JetStream") || !strings.Contains(p.stderr.String(), store) {
		t.Errorf("exit %d, want 1 with JetStream's reason and the store\n%s", code, p.stderr)
	}
}

// TestSignalWhileRegisteringGroups: a configuration with very many
// groups takes the worker long to register (each group rebuilds the
// meta tool's schema); a SIGTERM meanwhile stops the start there. The
// worker went on registering every group (minutes for 20,000) before it
// looked at the signal.
func TestSignalWhileRegisteringGroups(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("groups:\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "  - name: g%d\n    description: group %d\n", i, i)
	}
	conf := filepath.Join(dir, "groups.yaml")
	mustWrite(t, conf, b.String())
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	p := startProc(t, cleanEnv(t), workerBin, "--log-format", "json", "--config", conf, "--listen", addr, "--store-dir", filepath.Join(dir, "js"))
	// The group-state bucket exists once the worker bound it: it is
	// registering the groups then.
	var js jetstream.JetStream
	natstest.WaitFor(t, "the worker to bind its group-state bucket", func() bool {
		if js == nil {
			nc, err := nats.Connect("nats://" + addr)
			if err != nil {
				return false
			}
			t.Cleanup(nc.Close)
			js, _ = jetstream.New(nc)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.KeyValue(ctx, wire.BucketGroups)
		return err == nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 0 || !strings.Contains(p.stderr.String(), "stopped during start") {
		t.Errorf("exit %d, want 0 after stopping during the start\n%s", code, p.stderr)
	}
}
