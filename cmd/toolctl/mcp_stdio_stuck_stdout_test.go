package main_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMCPStdioSIGTERMStuckStdout: on SIGTERM `toolctl mcp stdio` exits
// even when its client has stopped reading stdout. Before, the answers
// it was writing blocked on the full pipe, the go-sdk's session close
// waited for them, and the process never exited (a host that stops
// reading, then asks its server to stop, had to kill it).
func TestMCPStdioSIGTERMStuckStdout(t *testing.T) {
	s := startStuckStdout(t)
	s.stopBySIGTERM(t)
}

// stopBySIGTERM sends the process SIGTERM and waits for it to exit 0,
// its stdout unread.
func (s *stuckStdout) stopBySIGTERM(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("exit: %v, want 0\n%s", err, s.logs())
		}
	case <-time.After(mcpGuard):
		t.Fatal("toolctl mcp stdio did not stop on SIGTERM while its stdout was not read")
	}
}

// TestMCPStdioEOFStuckStdout: at the end of its stdin `toolctl mcp stdio`
// exits once its calls have had their drain (--drain), even when its
// client has stopped reading stdout. Before, the answers it was writing
// blocked on the full pipe, the go-sdk's session close waited for them,
// and the process never exited: only a signal gave the writes up. The
// answers dropped are said in one line with how many and why, as on
// SIGTERM (TestMCPStdioSIGTERMDroppedWarned); before, the line said
// neither. The test takes its 1 s drain and the 5 s given to the client
// after it.
func TestMCPStdioEOFStuckStdout(t *testing.T) {
	s := startStuckStdout(t, "--drain", "1s")
	s.stdin.Close()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("exit: %v, want 0\n%s", err, s.logs())
		}
	case <-time.After(2 * mcpGuard):
		t.Fatalf("toolctl mcp stdio did not exit at the end of its stdin while its stdout was not read\n%s", s.logs())
	}
	// The 8 calls' answers: the first blocks on the full pipe, the others wait behind it.
	warned := droppedLines(s.logs())
	if len(warned) != 1 || !strings.Contains(warned[0], "dropped=8") || !strings.Contains(warned[0], "stdin ended") ||
		!strings.Contains(warned[0], `reason="stdout was not read`) {
		t.Errorf("want one warning naming 8 answers dropped after stdin ended as stdout was not read, got %q\n%s", warned, s.logs())
	}
}

// TestMCPStdioEOFDrainDroppedWarned: at the end of its stdin `toolctl
// mcp stdio` waits for the answers of the calls still running, for at
// most its drain (--drain), then ends the session, and those calls'
// answers are never written: it said nothing of them. It says how many,
// and why, in one line, with the drain it gave them.
func TestMCPStdioEOFDrainDroppedWarned(t *testing.T) {
	url := startMCPFleet(t)
	// The steps take 100 s; the drain waits 2 s.
	const drain = 2 * time.Second
	start := time.Now()
	stdout, stderr, err, exited := stdioAtEOFWith(t, url, []string{"--drain", drain.String()}, 2*mcpGuard,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":5000}}}`)
	if !exited || err != nil {
		t.Fatalf("exited %v: %v, want exit 0 after the drain\n%s", exited, err, stderr)
	}
	// A floor, which load only lengthens: the call still running was
	// waited for, not dropped at stdin's end.
	if took := time.Since(start); took < drain {
		t.Errorf("exited %v after it started, before its %v drain was over\n%s", took, drain, stderr)
	}
	if strings.Contains(stdout, `"id":2,"result"`) {
		t.Fatalf("the call was answered:\n%s", stdout)
	}
	warned := droppedLines(stderr)
	if len(warned) != 1 || !strings.Contains(warned[0], "dropped=1") || !strings.Contains(warned[0], "stdin ended") ||
		!strings.Contains(warned[0], "still running") || !strings.Contains(warned[0], "drain="+drain.String()) {
		t.Errorf("want one warning naming 1 answer dropped after stdin ended, its call still running after the %v drain, got %q\n%s", drain, warned, stderr)
	}
}

// droppedLines are the lines of logs that say answers were dropped.
func droppedLines(logs string) []string {
	var warned []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "answers dropped") {
			warned = append(warned, l)
		}
	}
	return warned
}

// stuckStdout is a `toolctl mcp stdio` whose stdout nobody reads, with
// calls whose answers are more than the pipe holds, all of them run.
type stuckStdout struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error // cmd.Wait's result
	mu    sync.Mutex
	se    strings.Builder
}

func (s *stuckStdout) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.se.String()
}

func startStuckStdout(t *testing.T, flags ...string) *stuckStdout {
	t.Helper()
	url := startMCPFleet(t)
	s := &stuckStdout{cmd: exec.Command(toolctlBinary(t), append([]string{"mcp", "stdio"}, flags...)...), done: make(chan error, 1)}
	s.cmd.Env = mcpEnv(t, url)
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.stdin = stdin
	t.Cleanup(func() { stdin.Close() })
	// stdout is a pipe nobody reads: its buffer (64 KiB) fills.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	s.cmd.Stdout, s.cmd.Stderr = w, lockedWriter{&s.mu, &s.se}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { s.cmd.Process.Kill() })
	go func() { s.done <- s.cmd.Wait() }()
	const calls = 8 // their answers (200 KB each) are more than the pipe holds
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	for i := range calls {
		in += fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`+"\n", 10+i, strings.Repeat("b", 200<<10))
	}
	if _, err := io.WriteString(stdin, in); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(mcpGuard)
	for {
		ran := strings.Count(s.logs(), "tool=echo")
		if ran == calls {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls ran\n%s", ran, calls, s.logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMCPStdioSIGTERMDroppedWarned: on SIGTERM, answers `toolctl mcp
// stdio` could not write (its client stopped reading stdout) are named on
// stderr, in one line with how many and why. Before, they were dropped
// without a word (or said to be dropped after stdin ended, which it had
// not).
func TestMCPStdioSIGTERMDroppedWarned(t *testing.T) {
	s := startStuckStdout(t)
	s.stopBySIGTERM(t)
	logs := s.logs()
	warned := droppedLines(logs)
	// The 8 calls' answers: the first blocks on the full pipe, the others wait behind it.
	if len(warned) != 1 || !strings.Contains(warned[0], "dropped=8") || !strings.Contains(warned[0], "stopping") {
		t.Errorf("want one warning naming 8 answers dropped while stopping, got %q\n%s", warned, logs)
	}
}
