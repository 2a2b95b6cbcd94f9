package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
)

// The worker and toolctl binaries, built once by TestMain.
var workerBin, toolctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolbus-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerBin, toolctlBin = filepath.Join(dir, "worker"), filepath.Join(dir, "toolctl")
	for bin, pkg := range map[string]string{workerBin: "github.com/toolbus/toolbus/cmd/worker", toolctlBin: "github.com/toolbus/toolbus/cmd/toolctl"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// guard bounds every wait so that a broken build fails instead of hanging;
// it is never a timing assertion.
const guard = 60 * time.Second

// cleanEnv is the environment of the processes: no NATS_* settings of the
// machine, and a data directory of the test's own.
func cleanEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "XDG_DATA_HOME="+t.TempDir()), extra...)
}

// lines collects a process's output lines, safe for concurrent use.
type lines struct {
	mu   sync.Mutex
	all  []string
	more chan struct{} // closed and replaced on every new line
	eof  bool
}

func newLines(r io.Reader) *lines {
	l := &lines{more: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			close(l.more)
			l.more = make(chan struct{})
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.eof = true
		close(l.more)
		l.mu.Unlock()
	}()
	return l
}

// wait returns the first line for which match is true, waiting for it up
// to guard; ok is false when the stream ended or the guard passed first.
func (l *lines) wait(match func(string) bool) (string, bool) {
	deadline := time.After(guard)
	seen := 0
	for {
		l.mu.Lock()
		for ; seen < len(l.all); seen++ {
			if match(l.all[seen]) {
				s := l.all[seen]
				l.mu.Unlock()
				return s, true
			}
		}
		eof, more := l.eof, l.more
		l.mu.Unlock()
		if eof {
			return "", false
		}
		select {
		case <-more:
		case <-deadline:
			return "", false
		}
	}
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// proc is a running worker or toolctl process.
type proc struct {
	cmd    *exec.Cmd
	stdout *lines
	stderr *lines
	done   chan struct{}
	err    error // the Wait error, after done
}

func startProc(t testing.TB, env []string, bin string, args ...string) *proc {
	t.Helper()
	return startProcWith(t, env, nil, bin, args...)
}

// startProcWith starts a process with stdin (nil: none).
func startProcWith(t testing.TB, env []string, stdin io.Reader, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = stdin
	so, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	se, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdout: newLines(so), stderr: newLines(se), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Wait closes the pipes, so let the readers drain first.
		p.stdout.wait(func(string) bool { return false })
		p.stderr.wait(func(string) bool { return false })
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(guard):
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// exit waits for the process and returns its exit code.
func (p *proc) exit(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(guard):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not exit within %v\nstdout:\n%s\nstderr:\n%s", p.cmd.Path, guard, p.stdout, p.stderr)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.cmd.Path, p.err)
	}
	return 0
}

// worker is a running worker process.
type worker struct {
	*proc
	url      string // the NATS URL it serves on
	instance string
}

// startWorker starts a worker with JSON logs and waits until it is ready.
// Without --nats it runs its embedded server on a random port with a
// store directory of the test's own.
func startWorker(t testing.TB, args ...string) *worker {
	t.Helper()
	args = append([]string{"--log-format", "json"}, args...)
	if !containsFlag(args, "--nats") && !containsFlag(args, "--listen") {
		args = append(args, "--listen", "127.0.0.1:0", "--store-dir", filepath.Join(t.TempDir(), "js"))
	}
	return ready(t, startProc(t, cleanEnv(t), workerBin, args...), args)
}

// ready waits for a worker process's start line (args for the failure).
func ready(t testing.TB, p *proc, args []string) *worker {
	t.Helper()
	line, ok := p.stderr.wait(func(s string) bool { return strings.Contains(s, `"toolbus worker ready"`) })
	if !ok {
		t.Fatalf("worker %v not ready:\n%s", args, p.stderr)
	}
	var ready struct {
		NATS     string `json:"nats"`
		Instance string `json:"instance"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatalf("start line %q: %v", line, err)
	}
	return &worker{proc: p, url: ready.NATS, instance: ready.Instance}
}

func containsFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// stop sends SIGTERM and returns the exit code.
func (w *worker) stop(t testing.TB) int {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return w.exit(t)
}

// toolctl runs toolctl to the end and returns its output and exit code.
func toolctl(t testing.TB, url string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolctlBin, append([]string{"--nats", url}, args...)...)
	cmd.Env = cleanEnv(t)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("toolctl %v: %v", args, err)
	}
	return so.String(), se.String(), code
}

// gone reports whether no live process has the pid (a zombie counts as
// gone: it runs nothing and only waits to be reaped).
func gone(pid int) bool {
	if err := ostest.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	state, err := procState(pid)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	return state == 'Z' || state == 'X'
}

// procState is the process's state letter in /proc/<pid>/stat (R, S, T,
// Z, ...).
func procState(pid int) (byte, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, fmt.Errorf("unreadable %q", s)
	}
	return s[i+2], nil
}

// freeze stops the process (SIGSTOP) and returns once it is stopped:
// kill returns before the signal takes effect, which on a loaded machine
// can be long enough for the process to answer one more message.
func freeze(t testing.TB, p *os.Process) {
	t.Helper()
	if err := p.Signal(ostest.Stop); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the process to stop", func() bool {
		state, err := procState(p.Pid)
		return err == nil && state == 'T'
	})
}
