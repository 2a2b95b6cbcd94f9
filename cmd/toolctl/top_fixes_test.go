package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// topFleet starts an embedded server and one real worker serving the tools
// of tk; it returns the server's URL.
func topFleet(t *testing.T, tk *toolkit.Toolkit) string {
	t.Helper()
	s := natstest.Embedded(t, true)
	w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return s.ClientURL()
}

// TestTopSurvivesGarbageStatsAnswer: one participant of the fleet answers
// $SRV.STATS.toolbus with a STATS object whose endpoints list holds a null
// (valid JSON, a buggy or hostile service). toolctl top must show the real
// worker's tools, not crash.
// Anyone may answer $SRV.STATS.toolbus: an answer with a null endpoint
// made toolctl top panic.
func TestTopSurvivesGarbageStatsAnswer(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "hi", nil })); err != nil {
		t.Fatal(err)
	}
	url := topFleet(t, tk)
	rogue := natstest.URLConn(t, url)
	if _, err := rogue.Subscribe("$SRV.STATS.toolbus", func(m *nats.Msg) {
		m.Respond([]byte(`{"type":"io.nats.micro.v1.stats_response","name":"toolbus","id":"rogue","endpoints":[null]}`))
	}); err != nil {
		t.Fatal(err)
	}
	rogue.Flush()
	var code int
	var out, errs string
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("toolctl top --once panicked on a STATS answer with a null endpoint: %v", p)
			}
		}()
		code, out, errs = toolctl(t, "--nats", url, "top", "--once", "--interval", "200ms")
	}()
	if code != exitOK || !strings.Contains(out, "echo") {
		t.Fatalf("toolctl top --once: exit %d\n%s%s", code, out, errs)
	}
}

// TestTopLastErrorValidUTF8: the LAST ERROR column is cut to 60 bytes;
// a worker's last error with non-ASCII text (a file name, a message in
// another language) must stay valid UTF-8 when cut.
// The LAST ERROR column was cut at a byte count, mid-character.
func TestTopLastErrorValidUTF8(t *testing.T) {
	tk := toolkit.New(nil)
	fail := toolkit.Func("open", "Open.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New(`FileError: "` + strings.Repeat("é", 40) + `.txt" does not exist.`)
	})
	if err := tk.Add(fail); err != nil {
		t.Fatal(err)
	}
	url := topFleet(t, tk)
	c, err := bus.NewClient(natstest.URLConn(t, url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{Name: "open"}); r.State != toolkit.StateError {
		t.Fatalf("open: %+v", r)
	}
	code, out, errs := toolctl(t, "--nats", url, "top", "--once", "--interval", "200ms")
	if code != exitOK {
		t.Fatalf("toolctl top --once: exit %d %s", code, errs)
	}
	if !utf8.ValidString(out) {
		for _, line := range strings.Split(out, "\n") {
			if !utf8.ValidString(line) {
				t.Errorf("toolctl top prints invalid UTF-8: %q", line)
			}
		}
	}
}

// TestTopLastErrorOneLine: a tool's error text often spans lines (a Python
// traceback, a shell command's stderr); toolctl top's table must keep one
// line per tool.
// A multi-line error (a traceback) broke the table into extra lines.
func TestTopLastErrorOneLine(t *testing.T) {
	tk := toolkit.New(nil)
	py := toolkit.Func("run", "Run.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New("Traceback (most recent call last):\n  File \"<string>\", line 1\nZeroDivisionError: division by zero")
	})
	ok := toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "hi", nil })
	for _, tool := range []*toolkit.Tool{py, ok} {
		if err := tk.Add(tool); err != nil {
			t.Fatal(err)
		}
	}
	url := topFleet(t, tk)
	c, err := bus.NewClient(natstest.URLConn(t, url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{Name: "run"}); r.State != toolkit.StateError {
		t.Fatalf("run: %+v", r)
	}
	code, out, errs := toolctl(t, "--nats", url, "top", "--once", "--interval", "200ms")
	if code != exitOK {
		t.Fatalf("toolctl top --once: exit %d %s", code, errs)
	}
	// "1 worker, rates over …", the header, one row per tool (echo, run).
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 4 {
		t.Errorf("toolctl top --once printed %d lines for 2 tools, want 4:\n%s", len(lines), out)
	}
}

// TestTopAverageIgnoresRefusedCalls: AVG is "the average duration" of the
// tool's calls. Calls answered overloaded never ran; counting each as 0s
// makes a 150ms tool look like a few milliseconds exactly when the fleet
// is overloaded (the worker's own duration histogram leaves them out).
// Calls refused without running (overloaded) counted as 0 s in AVG, so a
// tool looked fastest exactly when it was overloaded.
func TestTopAverageIgnoresRefusedCalls(t *testing.T) {
	tk := toolkit.New(nil)
	slow := toolkit.Func("slow", "Slow.", func(ctx context.Context, in struct{}) (string, error) {
		time.Sleep(150 * time.Millisecond)
		return "done", nil
	})
	if err := tk.Add(slow); err != nil {
		t.Fatal(err)
	}
	s := natstest.Embedded(t, true)
	w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1", MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if r := c.Invoke(ctx, toolkit.ToolCall{Name: "slow"}); r.Code == toolkit.CodeOverloaded {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	code, out, errs := toolctl(t, "--nats", s.ClientURL(), "top", "--once", "--interval", "1s")
	stop()
	wg.Wait()
	if code != exitOK {
		t.Fatalf("toolctl top --once: exit %d %s", code, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 6 && f[0] == "slow" {
			avg, err := time.ParseDuration(f[4])
			if err != nil || avg < 100*time.Millisecond {
				t.Errorf("AVG of a tool whose every run takes 150ms: %s\n%s", f[4], out)
			}
			return
		}
	}
	t.Fatalf("no row for slow:\n%s", out)
}
