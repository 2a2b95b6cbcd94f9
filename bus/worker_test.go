package bus_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	"github.com/vmihailenco/msgpack/v5"
)

var testWorkerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolbus-testworker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testWorkerBin = filepath.Join(dir, "testworker")
	out, err := exec.Command("go", "build", "-o", testWorkerBin, "./internal/testworker").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the test worker: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startWorkerProcess runs the test worker binary against url and waits
// until it serves.
func startWorkerProcess(t *testing.T, url, instance string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testWorkerBin, "--nats", url, "--instance", instance)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && !strings.HasPrefix(line, "ready") {
			err = fmt.Errorf("unexpected first line %q", line)
		}
		ready <- err
		io_discard(stdout)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(guard):
		t.Fatal("the worker process never became ready")
	}
	return cmd
}

func io_discard(r interface{ Read([]byte) (int, error) }) {
	buf := make([]byte, 512)
	for {
		if _, err := r.Read(buf); err != nil {
			return
		}
	}
}

// TestWorkerKilled kills a real worker process mid-call: the caller must
// be told worker_lost (after the stall timeout), never hang.
func TestWorkerKilled(t *testing.T) {
	s := natstest.Embedded(t, true)
	cmd := startWorkerProcess(t, s.ClientURL(), "doomed")
	const hb = 100 * time.Millisecond
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: hb})

	var final *toolkit.Response
	var killedAt time.Time
	// Nothing but the stall detection ends the call: the tool sleeps 60 s
	// and the call's context has no deadline; the guard below only keeps a
	// broken client from hanging the test.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	guarded := time.AfterFunc(guard, cancel)
	defer guarded.Stop()
	for ev := range c.Call(ctx, toolkit.ToolCall{ID: "killed-1", Name: "sleep", Input: map[string]any{"seconds": 60}}) {
		if ev.Progress != nil && killedAt.IsZero() {
			// The worker is running the call: kill it without a chance to
			// say goodbye.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killedAt = time.Now()
		}
		final = ev.Final
	}
	if killedAt.IsZero() {
		t.Fatal("the call never reported progress, the worker was not killed mid-call")
	}
	if ctx.Err() != nil {
		t.Fatalf("the caller was not told worker_lost after the SIGKILL (stall timeout %v) before the test's %v guard ended the call: %+v", 3*hb, guard, final)
	}
	if final.Code != toolkit.CodeWorkerLost || final.State != toolkit.StateError {
		t.Fatalf("final = %+v, want worker_lost", final)
	}
	t.Logf("worker_lost %v after SIGKILL (stall timeout %v)", time.Since(killedAt).Round(time.Millisecond), 3*hb)
}

func TestTwoWorkersShareLoad(t *testing.T) {
	s := natstest.Embedded(t, false)
	for _, name := range []string{"w1", "w2"} {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("nap", "Naps briefly.", func(ctx context.Context, in struct{}) (string, error) {
			time.Sleep(20 * time.Millisecond)
			return "ok", nil
		}))
		serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: name})
	}
	c := newClient(t, natstest.Connect(t, s), nil)
	var mu sync.Mutex
	served := map[any]int{}
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := c.Invoke(ctxT(t), toolkit.ToolCall{ID: fmt.Sprintf("load-%d", i), Name: "nap"})
			if resp.State != toolkit.StateSuccess {
				t.Errorf("call %d: %+v", i, resp)
				return
			}
			mu.Lock()
			served[resp.Metadata[wire.MetaWorker]]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if served["w1"] == 0 || served["w2"] == 0 || served["w1"]+served["w2"] != 60 {
		t.Fatalf("calls per worker %v: both workers should serve some of the 60", served)
	}
	t.Logf("calls per worker: %v", served)
}

func TestLiveToolChanges(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	wnc := natstest.Connect(t, s)
	w := serve(t, wnc, tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)

	mustAdd(t, tk, toolkit.Func("late", "Added after the worker started.", func(ctx context.Context, in struct{}) (string, error) { return "here", nil }))
	if !slices.Contains(w.Subjects(), "tools.call.late") {
		t.Fatalf("subjects %v: the new tool is not subscribed", w.Subjects())
	}
	// The subscription is sent on the worker's connection; once that is
	// flushed the server routes calls to it.
	if err := wnc.Flush(); err != nil {
		t.Fatal(err)
	}
	if resp := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "late"}); resp.Text() != "here" {
		t.Fatalf("new tool: %+v", resp)
	}
	tk.Remove("late")
	natstest.WaitFor(t, "the removed tool's unsubscription", func() bool {
		return !slices.Contains(w.Subjects(), "tools.call.late") && !slices.Contains(w.Subjects(), "tools.call.late.*")
	})
	natstest.WaitFor(t, "the removed tool to be not_found", func() bool {
		return c.Invoke(ctxT(t), toolkit.ToolCall{Name: "late"}).Code == toolkit.CodeNotFound
	})
	if got := w.Subjects(); !slices.Equal(got, []string{"tools.call.echo", "tools.call.echo.*"}) {
		t.Fatalf("subjects %v", got)
	}
}

// rawRequest sends a hand-made request and decodes the one final frame.
func rawRequest(t *testing.T, nc *nats.Conn, subject string, hdr nats.Header, body []byte) *wire.Frame {
	t.Helper()
	msg := &nats.Msg{Subject: subject, Header: hdr, Data: body}
	m, err := nc.RequestMsg(msg, guard)
	if err != nil {
		t.Fatal(err)
	}
	f, err := decodeFrame(m)
	if err != nil {
		t.Fatalf("reply %q: %v", m.Data, err)
	}
	return f
}

// decodeFrame decodes and checks a reply frame in the encoding its
// headers say.
func decodeFrame(m *nats.Msg) (*wire.Frame, error) {
	f := new(wire.Frame)
	if err := wire.CodecOf(m.Header).Unmarshal(m.Data, f); err != nil {
		return nil, err
	}
	return f, f.Check()
}

func TestBadInput(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	if err := tk.AddGroup(toolkit.Group{Name: "g", Description: "A group."}); err != nil {
		t.Fatal(err)
	}
	var logs natstest.Buffer
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	nc := natstest.Connect(t, s)
	mp := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	jsonHdr := func() nats.Header { return nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}} }
	hdr := func(k, v string) nats.Header { return nats.Header{k: {v}} }
	echo := wire.Request{ID: "b1", Input: map[string]any{"text": "x"}}
	cases := []struct {
		name    string
		subject string
		hdr     nats.Header
		body    []byte
		id      string
		code    toolkit.Code
		text    string
	}{
		{"undecodable msgpack", "tools.call.echo", nil, []byte{0xc1, 0x00, 0xff}, "", toolkit.CodeInvalidInput, "not a valid msgpack call object"},
		{"msgpack that is not an object", "tools.call.echo", nil, mp("just a string"), "", toolkit.CodeInvalidInput, "not a valid msgpack call object"},
		{"undecodable JSON", "tools.call.echo", jsonHdr(), []byte(`{"id":`), "", toolkit.CodeInvalidInput, "not a valid json call object"},
		// nats req with a JSON body but no header: the answer says what the
		// body lacks, not only that it is no msgpack.
		{"JSON without its header", "tools.call.echo", nil, []byte(`{"id":"b5","input":{"text":"x"}}`), "", toolkit.CodeInvalidInput, "send it with the header Content-Type: application/json"},
		{"JSON array without its header", "tools.call.echo", nil, []byte(` [1]`), "", toolkit.CodeInvalidInput, "send it with the header Content-Type: application/json"},
		{"trailing bytes", "tools.call.echo", nil, append(mp(echo), 0x01), "", toolkit.CodeInvalidInput, "trailing bytes"},
		{"missing call id", "tools.call.echo", nil, mp(wire.Request{Input: map[string]any{"text": "x"}}), "", toolkit.CodeInvalidInput, "no call id"},
		{"call id not a token", "tools.call.echo", nil, mp(wire.Request{ID: "a.b", Input: map[string]any{"text": "x"}}), "a.b", toolkit.CodeInvalidInput, "call id \"a.b\" is invalid"},
		{"name and subject disagree", "tools.call.echo", nil, mp(wire.Request{ID: "b2", Name: "other"}), "b2", toolkit.CodeInvalidInput, "names the tool \"other\""},
		{"invalid input", "tools.call.echo", nil, mp(wire.Request{ID: "b3", Input: map[string]any{"text": 1}}), "b3", toolkit.CodeInvalidInput, "Input validation failed"},
		{"unsupported version", "tools.call.echo", hdr(wire.HeaderVersion, "2"), mp(echo), "", toolkit.CodeInvalidInput, "header Toolbus-Version: wire version \"2\""},
		{"bad timeout header", "tools.call.echo", hdr(wire.HeaderTimeout, "soon"), mp(echo), "b1", toolkit.CodeInvalidInput, "Toolbus-Timeout"},
		{"bad heartbeat header", "tools.call.echo", hdr(wire.HeaderHeartbeat, "often"), mp(echo), "b1", toolkit.CodeInvalidInput, "Toolbus-Heartbeat"},
		{"negative heartbeat is clamped", "tools.call.echo", hdr(wire.HeaderHeartbeat, "-5"), mp(echo), "b1", "", "x"},
		{"huge heartbeat is clamped", "tools.call.echo", hdr(wire.HeaderHeartbeat, "9223372036854775807"), mp(echo), "b1", "", "x"},
		{"negative timeout", "tools.call.echo", hdr(wire.HeaderTimeout, "-1"), mp(echo), "b1", toolkit.CodeTimeout, "deadline had passed"},
		{"hugely negative timeout", "tools.call.echo", hdr(wire.HeaderTimeout, "-9223372036854775808"), mp(echo), "b1", toolkit.CodeTimeout, "deadline had passed"},
		{"bad revision header", "tools.call.echo", hdr(wire.HeaderGroupsRevision, "x"), mp(echo), "b1", toolkit.CodeInvalidInput, "Toolbus-Groups-Revision"},
		{"deadline already passed", "tools.call.echo", hdr(wire.HeaderTimeout, "0"), mp(echo), "b1", toolkit.CodeTimeout, "deadline had passed"},
		{"reset_tools without a session", "tools.call.reset_tools", nil, mp(wire.Request{ID: "b4", Input: map[string]any{"g": true}}), "b4", toolkit.CodeInvalidInput, "needs a session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := rawRequest(t, nc, tc.subject, tc.hdr, tc.body)
			if f.Kind != wire.KindFinal || f.Seq != 1 || f.ID != tc.id {
				t.Fatalf("frame %+v, want one final with id %q", f, tc.id)
			}
			if f.Final.Code != tc.code || f.Final.State != tc.code.State() || !strings.Contains(f.Final.Text(), tc.text) {
				t.Fatalf("final %+v, want %s containing %q", f.Final, tc.code, tc.text)
			}
		})
	}

	t.Run("no reply subject", func(t *testing.T) {
		if err := nc.Publish("tools.call.echo", mp(wire.Request{ID: "noreply", Input: map[string]any{"text": "x"}})); err != nil {
			t.Fatal(err)
		}
		natstest.WaitFor(t, "a log line for the request without a reply subject", func() bool { return strings.Contains(logs.String(), "without a reply subject") })
		if !strings.Contains(logs.String(), "call=noreply") {
			t.Fatalf("log %q does not name the call", logs.String())
		}
	})

	t.Run("request over max_payload", func(t *testing.T) {
		c := newClient(t, nc, nil)
		resp := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "huge", Name: "echo", Input: map[string]any{"text": strings.Repeat("x", int(nc.MaxPayload()))}})
		if resp.Code != toolkit.CodeInvalidInput || !strings.Contains(resp.Text(), "over the server's max_payload") {
			t.Fatalf("%+v", resp)
		}
	})

	t.Run("worker still serves", func(t *testing.T) {
		f := rawRequest(t, nc, "tools.call.echo", nil, mp(wire.Request{ID: "after", Input: map[string]any{"text": "still here"}}))
		if f.Final.State != toolkit.StateSuccess || f.Final.Text() != "still here" {
			t.Fatalf("%+v", f.Final)
		}
	})
}

func TestOverloaded(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	mustAdd(t, tk, toolkit.Func("hold", "Holds until released.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "done", nil
	}))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{MaxInFlight: 2, RetryAfter: 250 * time.Millisecond})
	c := newClient(t, natstest.Connect(t, s), nil)

	results := make(chan *toolkit.Response, 2)
	for i := range 2 {
		go func() { results <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: fmt.Sprintf("held-%d", i), Name: "hold"}) }()
	}
	<-started
	<-started
	begin := time.Now()
	resp := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "third", Name: "hold"})
	took := time.Since(begin)
	if resp.Code != toolkit.CodeOverloaded || resp.State != toolkit.StateError {
		t.Fatalf("third call at the limit: %+v, want overloaded", resp)
	}
	if ms, _ := number(resp.Metadata[wire.MetaRetryAfterMS]); ms != 250 {
		t.Fatalf("retry_after_ms %v (%T), want 250", resp.Metadata[wire.MetaRetryAfterMS], resp.Metadata[wire.MetaRetryAfterMS])
	}
	t.Logf("overloaded answered in %v", took)
	close(release)
	for range 2 {
		if r := <-results; r.State != toolkit.StateSuccess {
			t.Fatalf("held call: %+v", r)
		}
	}
}

func TestGracefulStop(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started := make(chan string, 2)
	finish := make(chan struct{})
	mustAdd(t, tk, toolkit.Func("ignorant", "Waits for its ctx.", func(ctx context.Context, in struct{}) (string, error) {
		started <- "ignorant"
		<-ctx.Done()
		return "", ctx.Err()
	}))
	mustAdd(t, tk, toolkit.Func("quick", "Finishes when told.", func(ctx context.Context, in struct{}) (string, error) {
		started <- "quick"
		<-finish
		return "finished", nil
	}))
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), nil)
	res := make(chan *toolkit.Response, 2)
	for _, name := range []string{"ignorant", "quick"} {
		go func() { res <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "stop-" + name, Name: name}) }()
	}
	<-started
	<-started
	grace, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(grace) }()
	close(finish) // "quick" finishes within the grace period
	got := map[string]*toolkit.Response{}
	for range 2 {
		r := <-res
		got[r.ID] = r
	}
	if r := got["stop-quick"]; r.State != toolkit.StateSuccess {
		t.Fatalf("call finishing within the grace period: %+v", r)
	}
	if r := got["stop-ignorant"]; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("call outliving the grace period: %+v, want interrupted", r)
	}
	if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "with 1 call running") {
		t.Fatalf("Stop = %v, want the grace period's deadline and the one call it interrupted", err)
	}
	// After Stop nobody serves: unavailable at once.
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "quick"}); r.Code != toolkit.CodeUnavailable {
		t.Fatalf("after Stop: %+v", r)
	}
}

// TestHeartbeats: a call silent for many heartbeat intervals is not lost.
// The stall timeout is a hundred heartbeats long, so a busy machine
// holding the worker off the CPU for a while does not end the call.
func TestHeartbeats(t *testing.T) {
	s := natstest.Embedded(t, false)
	const stall = 2 * time.Second
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("quiet", "Silent for a while.", func(ctx context.Context, in struct{}) (string, error) {
		time.Sleep(stall * 5 / 2) // 250 heartbeat intervals, 2.5 stall timeouts
		return "awake", nil
	}))
	// Probes off: a probe of the caller's inbox (every second) is a
	// heartbeat too, and would keep the call alive on its own.
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{CallerGoneAfter: -1})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 20 * time.Millisecond, StallTimeout: stall})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "quiet"}); r.State != toolkit.StateSuccess || r.Text() != "awake" {
		t.Fatalf("%+v", r)
	}
}

// TestHeartbeatsWhileResultHeld: a function tool's result is held for
// the final without a flush scheduled; while a middleware works on after
// the tool returned (writing nothing), the worker still sends heartbeats,
// so the caller does not take it for lost. The stall timeout is forty
// heartbeats long, so a busy machine holding the worker off the CPU for
// a while does not end the call.
func TestHeartbeatsWhileResultHeld(t *testing.T) {
	s := natstest.Embedded(t, false)
	const stall = 2 * time.Second
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
			if err := next(ctx, c, w); err != nil {
				return err
			}
			time.Sleep(2 * stall) // after the tool: an audit write, say
			return nil
		}
	})
	// Probes off: a probe of the caller's inbox (every second) is a
	// heartbeat too, and would keep the call alive on its own.
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{CallerGoneAfter: -1})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: stall})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "RESULT"}}); r.State != toolkit.StateSuccess || r.Text() != "RESULT" {
		t.Fatalf("final %s %s %.200q: want success RESULT", r.State, r.Code, r.Text())
	}
}

// TestAbandonedTool: a tool that ignores its cancelled ctx still gives the
// caller its final after AbandonAfter.
func TestAbandonedTool(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{}, 1)
	mustAdd(t, tk, toolkit.Stream("deaf", "Ignores its ctx.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		w.Write(toolkit.Text("partial "))
		started <- struct{}{}
		<-release
		return nil
	}))
	var logs natstest.Buffer
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{AbandonAfter: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	// The client waits for the worker's final far longer than the worker
	// needs to abandon the tool, so the final must be the worker's.
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{CancelGrace: guard})
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() { <-started; cancel() }()
	r := c.Invoke(ctx, toolkit.ToolCall{ID: "deaf-1", Name: "deaf"})
	if r.Code != toolkit.CodeInterrupted || !strings.HasPrefix(r.Text(), "partial ") {
		t.Fatalf("%+v", r)
	}
	if r.Metadata[wire.MetaWorker] == nil {
		t.Fatalf("metadata %v: the final was made up by the client, not sent by the worker", r.Metadata)
	}
	if !strings.Contains(logs.String(), "tool ignored its cancelled context") {
		t.Fatalf("no log line for the abandoned tool: %q", logs.String())
	}
}

// TestAbandonAfterHeldChunks: the notice of an abandoned tool comes after
// the chunks the tool wrote before it, also those still held when the
// call was already streaming.
func TestAbandonAfterHeldChunks(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{}, 1)
	big := strings.Repeat("a", 40<<10) // over the hold limit: flushed at once, the call streams
	mustAdd(t, tk, toolkit.Stream("deaf", "Ignores its ctx.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		w.Write(toolkit.Text(big))
		w.Write(toolkit.Text("b")) // held until the flush delay
		started <- struct{}{}
		<-release
		return nil
	}))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{AbandonAfter: 50 * time.Millisecond, FlushDelay: time.Hour})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{CancelGrace: guard})
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() { <-started; cancel() }()
	r := c.Invoke(ctx, toolkit.ToolCall{ID: "deaf-2", Name: "deaf"})
	if r.Code != toolkit.CodeInterrupted || !strings.HasPrefix(r.Text(), big+"b") {
		t.Fatalf("%s: the text after the first chunk is %.80q, want \"b\" then the notice", r.Code, strings.TrimPrefix(r.Text(), big))
	}
}

// TestStopUnderLoad stops a worker while calls keep arriving, just after
// one of its tools was removed (its subscription still draining): every
// call ends with one final (the worker's, or unavailable once nobody
// serves), and Stop returns.
func TestStopUnderLoad(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	mustAdd(t, tk, toolkit.Func("gone", "Removed while called.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return "gone", nil
	}))
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				name := []string{"echo", "gone"}[(g+i)%2]
				r := c.Invoke(ctx, toolkit.ToolCall{Name: name, Input: map[string]any{"text": "x"}})
				if r == nil || (r.State != toolkit.StateSuccess && r.Code != toolkit.CodeUnavailable && r.Code != toolkit.CodeNotFound) {
					bad.Add(1)
					t.Errorf("call %s: %+v", name, r)
				}
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	tk.Remove("gone")
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	wg.Wait()
	if w.InFlight() != 0 {
		t.Fatalf("%d calls still in flight after Stop", w.InFlight())
	}
}

// TestBurstIsNotOverload: a burst of instant calls, many more than
// MaxInFlight at once, is answered without overloaded: a call counts
// against the limit while it runs, not while it waits for a goroutine.
func TestBurstIsNotOverload(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{MaxInFlight: 64})
	c := newClient(t, natstest.Connect(t, s), nil)
	const burst = 2000
	var overloaded, failed atomic.Int32
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": fmt.Sprint(i)}})
			switch {
			case r.Code == toolkit.CodeOverloaded:
				overloaded.Add(1)
			case r.State != toolkit.StateSuccess:
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if overloaded.Load() > 0 || failed.Load() > 0 {
		t.Fatalf("%d of %d instant calls answered overloaded, %d failed otherwise", overloaded.Load(), burst, failed.Load())
	}
}

// TestCallGoroutinesShrink: the goroutines a burst of slow calls needs end
// when it is over, whatever their number was.
func TestCallGoroutinesShrink(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("nap", "Sleeps a little.", func(ctx context.Context, in struct{}) (string, error) {
		time.Sleep(50 * time.Millisecond)
		return "up", nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "nap"}); r.State != toolkit.StateSuccess {
				t.Errorf("nap: %+v", r)
			}
		}()
	}
	wg.Wait()
	natstest.WaitFor(t, "the burst's goroutines to end", func() bool { return runtime.NumGoroutine() <= base+20 })
}

// TestResentIDAfterFinal: a call id is free again by the time its final
// reaches the caller, so the same call sent again at once (as the approval
// flow asks) runs instead of being refused as already running.
func TestResentIDAfterFinal(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	for i := range 500 {
		r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "same-id", Name: "echo", Input: map[string]any{"text": fmt.Sprint(i)}})
		if r.Text() != fmt.Sprint(i) {
			t.Fatalf("send %d: %+v", i, r)
		}
	}
}

// TestQuickToolTurnedSlow: a tool that was quick for many calls runs on
// the reader that receives calls; when one of its calls blocks, the calls
// behind it still run (the worker's clock passes the receiving on), long
// before the blocked call ends.
func TestQuickToolTurnedSlow(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	var block atomic.Bool
	release := make(chan struct{})
	mustAdd(t, tk, toolkit.Func("flip", "Quick until told to block.", func(ctx context.Context, in struct{}) (string, error) {
		if block.Load() {
			<-release
		}
		return "ok", nil
	}))
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before the worker stops, also when the test fails
	// Quick calls one after the other: the tool runs where calls are
	// received.
	for range 200 {
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "flip"}); r.State != toolkit.StateSuccess {
			t.Fatalf("flip: %+v", r)
		}
	}
	block.Store(true)
	blocked := make(chan *toolkit.Response, 1)
	go func() { blocked <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "flip"}) }()
	for i := range 50 {
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": fmt.Sprint(i)}})
		if r.Text() != fmt.Sprint(i) {
			t.Fatalf("echo %d behind a blocked call: %+v", i, r)
		}
	}
	select {
	case r := <-blocked:
		t.Fatalf("the blocked call ended before it was released: %+v", r)
	default:
	}
	unblock()
	if r := <-blocked; r.State != toolkit.StateSuccess {
		t.Fatalf("the blocked call, released: %+v", r)
	}
}
