package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/toolbus/toolbus/toolkit"
)

type shellInput struct {
	Command string  `json:"command" jsonschema:"The shell command to execute."`
	Timeout float64 `json:"timeout,omitempty"`
}

type pythonInput struct {
	Code    string  `json:"code" jsonschema:"The Python code to execute. Print what you want to see: only the output is returned."`
	Timeout float64 `json:"timeout,omitempty"`
}

// runner starts commands in the workspace and streams their output.
type runner struct {
	ws         *workspace // the working directory (per session: its session's)
	sessions   bool
	shell      string
	python     string
	defTimeout time.Duration
	maxTimeout time.Duration
	maxOutput  int
}

// Tunables of the process handling, not worth a config knob.
const (
	// partialFlush is the longest an unterminated line waits for its
	// "\n" before it is streamed anyway (prompts, progress bars).
	partialFlush = 200 * time.Millisecond
	// maxPartial is the longest unterminated line kept before it is
	// streamed.
	maxPartial = 64 << 10
	// pipeGrace is how long output is still read after the command's
	// process group is gone: only a process that left the group (setsid)
	// can hold the pipe longer, and it is not waited for.
	pipeGrace = 2 * time.Second
)

func (r *runner) shellTool() *toolkit.Tool {
	t := toolkit.Stream(ExecuteShellCommand,
		"Execute a shell command in the workspace directory and return its output (stdout and stderr, "+
			"interleaved as they are written, streamed line by line) followed by its exit code in "+
			"<returncode></returncode> tags. The command and every process it starts are killed when "+
			"the timeout passes or the call is cancelled.",
		func(ctx context.Context, in shellInput, w toolkit.Writer) error {
			switch {
			case in.Command == "":
				return toolkit.NewError(toolkit.CodeInvalidInput, "InvalidArgumentsError: command is empty.")
			case strings.IndexByte(in.Command, 0) >= 0:
				return toolkit.NewError(toolkit.CodeInvalidInput, "InvalidArgumentsError: command contains a NUL byte, which no command line can hold.")
			}
			return r.run(ctx, w, in.Timeout, "command", nil, r.shell, "-c", in.Command)
		})
	r.describeTimeout(t)
	return t
}

func (r *runner) pythonTool() *toolkit.Tool {
	t := toolkit.Stream(ExecutePythonCode,
		"Execute Python 3 code in a fresh interpreter in the workspace directory and return its output "+
			"(stdout and stderr, interleaved, streamed line by line) followed by its exit code in "+
			"<returncode></returncode> tags. Use print to see results. The interpreter and every process "+
			"it starts are killed when the timeout passes or the call is cancelled.",
		func(ctx context.Context, in pythonInput, w toolkit.Writer) error {
			if in.Code == "" {
				return toolkit.NewError(toolkit.CodeInvalidInput, "InvalidArgumentsError: code is empty.")
			}
			py, err := exec.LookPath(r.python)
			if err != nil {
				return toolkit.Errorf(toolkit.CodeToolError,
					"PythonNotFoundError: %s needs a Python 3 interpreter, but %q was not found on this worker's PATH. Ask the operator to install Python 3, or use another tool.",
					ExecutePythonCode, r.python)
			}
			// A directory of its own: Python puts the script's directory
			// first on sys.path, and in the shared temporary directory
			// anyone's module would shadow the one the code imports.
			dir, err := os.MkdirTemp("", "toolbus-*")
			if err != nil {
				return toolkit.Errorf(toolkit.CodeUnavailable, "TempFileError: cannot store the code: %v", err)
			}
			defer os.RemoveAll(dir)
			file := filepath.Join(dir, "code.py")
			if err := os.WriteFile(file, []byte(in.Code), 0o600); err != nil {
				return toolkit.Errorf(toolkit.CodeUnavailable, "TempFileError: cannot store the code: %v", err)
			}
			// UTF-8 whatever the worker's locale, as AgentScope runs it:
			// the output, and open()'s default encoding.
			return r.run(ctx, w, in.Timeout, "code", []string{"PYTHONUTF8=1", "PYTHONIOENCODING=utf-8"}, py, "-u", file)
		})
	r.describeTimeout(t)
	return t
}

func (r *runner) describeTimeout(t *toolkit.Tool) {
	p := prop(t, "timeout")
	p["description"] = fmt.Sprintf("The maximum time in seconds the command may run (at most %g). It is killed, with every process it started, when the time is up.", r.maxTimeout.Seconds())
	p["default"] = r.defTimeout.Seconds()
	p["exclusiveMinimum"] = 0
	p["maximum"] = r.maxTimeout.Seconds()
}

// maxArgBytes is the longest argument the system starts a program with,
// where it is known: Linux's MAX_ARG_STRLEN (32 pages, 128 KiB, its NUL
// included); elsewhere 0, and a start refused says so (E2BIG).
func maxArgBytes() int {
	if runtime.GOOS == "linux" {
		return 32*os.Getpagesize() - 1
	}
	return 0
}

// tooLong is the error of a command line args the system does not start.
func tooLong(args []string) error {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return toolkit.Errorf(toolkit.CodeInvalidInput,
		"InvalidArgumentsError: the command is too long for this system to start (%d bytes; Linux takes at most 128 KiB). "+
			"Write it to a script file with %s and run the script.", n, WriteTextFile)
}

// timeout turns the model's seconds into a duration; 0 means the default.
func (r *runner) timeout(seconds float64) (time.Duration, error) {
	switch {
	case seconds == 0:
		return r.defTimeout, nil
	case seconds < 0 || math.IsNaN(seconds) || seconds > r.maxTimeout.Seconds():
		return 0, toolkit.Errorf(toolkit.CodeInvalidInput, "InvalidArgumentsError: timeout must be between 0 and %g seconds, got %g.", r.maxTimeout.Seconds(), seconds)
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// run executes name+args in a session and process group of its own
// (without the worker's controlling terminal), streams its output to
// w and reports the exit code. Cancelling ctx or passing the timeout kills
// the whole group; when the command exits, whatever it left running in its
// group is killed too, so no call leaves processes behind. what names
// the run in a timeout's answer: "command" or "code", as AgentScope's;
// env is set over the worker's environment.
func (r *runner) run(ctx context.Context, w toolkit.Writer, seconds float64, what string, env []string, name string, args ...string) error {
	d, err := r.timeout(seconds)
	if err != nil {
		return err
	}
	// Before the session's directory is made: a command the system will
	// not start makes none.
	if m := maxArgBytes(); m > 0 {
		for _, a := range args {
			if len(a) > m {
				return tooLong(args)
			}
		}
	}
	// The directory is checked to be the workspace's, then named by its
	// path: a swap in between is not caught, and a command is not
	// confined anyway.
	ws, _, release, err := r.ws.forSession(ctx, r.sessions, true)
	if err != nil {
		return err
	}
	release()
	// One pipe for both streams, so the output interleaves exactly as the
	// command wrote it.
	pr, pw, err := os.Pipe()
	if err != nil {
		return toolkit.Errorf(toolkit.CodeUnavailable, "ProcessError: %v", err)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = ws.real
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = commandAttr()
	leaders.mu.Lock()
	err = cmd.Start()
	if err == nil {
		leaders.m[cmd.Process.Pid] = true
	}
	leaders.mu.Unlock()
	pw.Close() // the child has its copies
	if err != nil {
		pr.Close()
		if errors.Is(err, syscall.E2BIG) { // the command line: Linux takes 128 KiB in one argument
			return tooLong(args)
		}
		return toolkit.Errorf(toolkit.CodeToolError, "ProcessError: cannot start %s: %v", name, err)
	}
	pgid := cmd.Process.Pid
	// The group, the command itself, which may have left the group for
	// another of its session (setpgid), and every other process of its
	// session. The group and the session are named by the leader's pid,
	// which the system may give another process once the leader is
	// reaped and the group empty: they are signalled only while the
	// leader is an unreaped child (running, or ended and left so by
	// waitExited), which holds the number.
	var killMu sync.Mutex
	owned := true
	kill := func() {
		killMu.Lock()
		defer killMu.Unlock()
		if owned {
			signalGroup(pgid)
		}
		_ = cmd.Process.Kill()
	}

	tctx, cancel := context.WithTimeoutCause(ctx, d, errCommandTimeout)
	defer cancel()
	stopKill := context.AfterFunc(tctx, kill)
	defer stopKill()

	out := newCollector(r.maxOutput)
	readDone := make(chan struct{})
	go func() { out.read(pr); close(readDone) }()

	waited := make(chan error, 1)
	go func() {
		var err error
		held := waitExited(pgid)
		if !held { // no way to wait without reaping: as before
			err = cmd.Wait()
		}
		kill() // leftovers of the group
		select {
		case <-readDone:
		case <-time.After(pipeGrace):
			pr.Close() // unblocks the reader
		}
		killMu.Lock()
		owned = false
		killMu.Unlock()
		if held {
			err = cmd.Wait()
		}
		reap(pgid)
		leaders.mu.Lock()
		delete(leaders.m, pgid)
		reapOrphans()
		leaders.mu.Unlock()
		waited <- err
	}()

	// Stream on this goroutine only: a Writer is not for concurrent use.
	stopped := false
	send := func(s string) {
		if s == "" || stopped {
			return
		}
		if err := w.Write(toolkit.Text(s)); err != nil {
			stopped = true // nobody listens: stop the command
			kill()
		}
	}
	// The timer runs from when an unterminated line began to wait, not
	// from the last output: a progress bar writes many times a second
	// and is never silent for partialFlush.
	flush := time.NewTimer(partialFlush)
	defer flush.Stop()
	armed := true
loop:
	for {
		select {
		case <-out.wake:
			send(out.take(false, false))
			if !armed && out.pending() {
				flush.Reset(partialFlush)
				armed = true
			}
		case <-flush.C:
			armed = false
			send(out.take(true, false))
		case <-readDone:
			break loop
		}
	}
	send(out.take(true, true))
	waitErr := <-waited
	pr.Close()

	if err := ctx.Err(); err != nil {
		return err
	}
	if stopped {
		return toolkit.ErrStopped
	}
	code := exitCode(cmd, waitErr)
	tail := ""
	if n := out.omitted(); n > 0 {
		tail = fmt.Sprintf("[%d bytes of output omitted: the limit is %d bytes]\n", n, r.maxOutput)
	}
	if out.kept() > 0 && !out.endsWithNewline() {
		tail = "\n" + tail
	}
	if code < 0 && errors.Is(context.Cause(tctx), errCommandTimeout) {
		// Killed for its timeout: AgentScope's sentence, then the code
		// its text shows then (-1, not the kill's -9), last as every
		// ending writes it.
		code = -1
		e := toolkit.Errorf(toolkit.CodeTimeout,
			"%sTimeoutError: The %s execution exceeded the timeout of %g seconds.\n<returncode>%d</returncode>",
			tail, what, d.Seconds(), code)
		e.Metadata = map[string]any{"exit_code": code}
		return e
	}
	c := toolkit.Text(fmt.Sprintf("%s<returncode>%d</returncode>", tail, code))
	c.Metadata = map[string]any{"exit_code": code}
	return w.Write(c)
}

var errCommandTimeout = errors.New("builtin: command timeout")

// signalGroup sends SIGKILL to process group pgid and to every process
// of the session of the same id. A variable for a test to watch.
var signalGroup = func(pgid int) {
	killGroup(pgid)
	killSession(pgid)
}

// leaders are the process ids of the commands running, which reapOrphans
// leaves to their cmd.Wait. A command is started with mu held, so it is
// known before it can end.
var leaders = struct {
	mu sync.Mutex
	m  map[int]bool
}{m: map[int]bool{}}

// exitCode is the process's exit status or, when a signal ended it,
// minus the signal's number, as Python's returncode is (-9 for SIGKILL).
func exitCode(cmd *exec.Cmd, err error) int {
	if ps := cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ps.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// collector gathers a command's output: complete lines, and the
// unterminated tail apart. It keeps at most max bytes and counts the rest.
type collector struct {
	wake chan struct{}

	mu       sync.Mutex
	ready    []byte
	partial  []byte
	max      int
	nkept    int
	nomitted int64
	lastNL   bool
}

func newCollector(max int) *collector {
	return &collector{wake: make(chan struct{}, 1), max: max, lastNL: true}
}

func (c *collector) read(f *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			c.add(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *collector) add(p []byte) {
	c.mu.Lock()
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		// One piece: the tail held back may end in part of a character
		// whose rest begins p.
		c.keep(append(c.partial, p[:i+1]...))
		c.partial = append(c.partial[:0], p[i+1:]...)
	} else {
		c.partial = append(c.partial, p...)
	}
	if len(c.partial) >= maxPartial {
		c.flushPartial(false)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// flushPartial moves the unterminated tail to the output, except (unless
// all) for an incomplete UTF-8 sequence at its end. c.mu is held.
func (c *collector) flushPartial(all bool) {
	p := c.partial
	cut := len(p)
	for i := len(p) - 1; !all && i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	c.keep(p[:cut])
	c.partial = append(p[:0], p[cut:]...)
}

// keep appends to the output within the limit. c.mu is held.
func (c *collector) keep(b []byte) {
	if len(b) == 0 {
		return
	}
	// What is counted is what is sent: an invalid byte is sent as U+FFFD
	// (three bytes).
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	room := c.max - c.nkept
	if c.max <= 0 {
		room = len(b)
	}
	if room <= 0 {
		c.nomitted += int64(len(b))
		return
	}
	if len(b) > room {
		for room > 0 && !utf8.RuneStart(b[room]) { // not within a character
			room--
		}
		c.nomitted += int64(len(b) - room)
		b = b[:room]
		if room == 0 {
			return
		}
	}
	c.ready = append(c.ready, b...)
	c.nkept += len(b)
	c.lastNL = b[len(b)-1] == '\n'
}

// take returns the output gathered since the last take; with partial, the
// unterminated tail too (all of it at the end, when all is set).
func (c *collector) take(partial, all bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if partial {
		c.flushPartial(all)
	}
	s := string(c.ready)
	c.ready = c.ready[:0]
	return strings.ToValidUTF8(s, "\uFFFD")
}

// pending reports whether an unterminated line waits to be sent.
func (c *collector) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.partial) > 0
}

func (c *collector) kept() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nkept
}

func (c *collector) omitted() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nomitted
}

func (c *collector) endsWithNewline() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastNL
}
