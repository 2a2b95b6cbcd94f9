package main_test

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkToolctlEcho is one `toolctl call echo` process end to end:
// start, connect, call, print, exit.
func BenchmarkToolctlEcho(b *testing.B) {
	w := startWorker(b)
	for b.Loop() {
		if out, errOut, code := toolctl(b, w.url, "call", "echo", `{"text":"hi"}`); code != 0 || out != "hi\n" {
			b.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	}
}

// BenchmarkCtrlC is the time from Ctrl-C on `toolctl call sleep` to its
// exit with the interrupted final (reported as ms/interrupt).
func BenchmarkCtrlC(b *testing.B) {
	w := startWorker(b)
	var total time.Duration
	for b.Loop() {
		p := startProc(b, cleanEnv(b), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":30}`)
		if _, ok := p.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
			b.Fatalf("no progress:\n%s", p.stderr)
		}
		start := time.Now()
		p.cmd.Process.Signal(syscall.SIGINT)
		if code := p.exit(b); code != 4 {
			b.Fatalf("exit %d\n%s", code, p.stderr)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/interrupt")
}
