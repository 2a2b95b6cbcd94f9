// Package bustest is the behavioural test suite every transport of a
// Toolkit must pass: the same tests run against the in-process
// *toolkit.Toolkit, against bus.Client over a real NATS server (in process
// and over TCP), and through the MCP gateway with the go-sdk's client, so
// no transport can drift from the core.
//
//	func TestLocal(t *testing.T) {
//		bustest.Run(t, func(t *testing.T, tk *toolkit.Toolkit) toolkit.Caller { return tk })
//	}
package bustest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// Transport serves tk and returns the Caller that reaches it. It registers
// its own cleanup with t.
type Transport func(t *testing.T, tk *toolkit.Toolkit) toolkit.Caller

// The suite holds every transport to the same events, with the
// differences a unary transport (Config.Unary) cannot avoid: MCP has no
// partial results, so a call's output arrives as one chunk with its final
// (after its progress), and a cancelled request gets no answer (MCP
// drops the response to a cancelled request), so its final is made by the
// consumer and keeps no partial output.

// guard bounds every wait in the suite: it only keeps a broken transport
// from hanging the test run, it asserts nothing about speed.
const guard = 30 * time.Second

// fixture is a toolkit with the suite's tools and the channels its tools
// report on.
type fixture struct {
	tk       *toolkit.Toolkit
	gate     chan struct{} // released by the test to let "stream" go on
	started  chan struct{} // closed when "block" runs
	runs     atomic.Int64  // how often "block" ran (wrote its partial output)
	observed chan error    // what "block" saw when its ctx ended, for each run
	returned chan struct{} // closed when "stream" returns
}

type echoIn struct {
	Text string `json:"text"`
}

type streamIn struct {
	N int `json:"n"`
}

type bigIn struct {
	TextBytes int `json:"text_bytes"`
	DataBytes int `json:"data_bytes"`
	// AnonBytes adds a data block without an ID (it never merges by ID).
	AnonBytes int `json:"anon_bytes,omitempty"`
}

type empty struct{}

func newFixture(t *testing.T, state toolkit.GroupState) *fixture {
	t.Helper()
	f := &fixture{
		tk:       toolkit.New(&toolkit.Options{State: state, Logger: slog.New(slog.DiscardHandler)}),
		gate:     make(chan struct{}),
		started:  make(chan struct{}),
		observed: make(chan error, 8),
		returned: make(chan struct{}),
	}
	tk := f.tk
	must(t, tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools.", Instructions: "Handle with care."}))
	// Active for a session that has set nothing: reset_tools' absolute
	// state must turn it off, and keep it off ({} included).
	must(t, tk.AddGroup(toolkit.Group{Name: "lab", Description: "Lab tools.", Active: true}))
	must(t, tk.Add(toolkit.Func("echo", "Echo the text back.",
		func(ctx context.Context, in echoIn) (string, error) { return in.Text, nil }), toolkit.ReadOnly()))
	must(t, tk.Add(toolkit.Func("fail", "Always fails.",
		func(ctx context.Context, in empty) (string, error) { return "", errors.New("boom") })))
	must(t, tk.Add(toolkit.Func("explode", "Always panics.",
		func(ctx context.Context, in empty) (string, error) { panic("kaboom") })))
	must(t, tk.Add(toolkit.Func("secret", "A tool in the vault group.",
		func(ctx context.Context, in empty) (string, error) { return "the secret", nil }), toolkit.InGroup("vault")))
	must(t, tk.Add(toolkit.Func("probe", "A tool in the lab group.",
		func(ctx context.Context, in empty) (string, error) { return "probed", nil }), toolkit.InGroup("lab")))
	must(t, tk.Add(toolkit.Stream("stream", "Writes n chunks, pausing after the first until released.",
		func(ctx context.Context, in streamIn, w toolkit.Writer) error {
			defer close(f.returned)
			if err := w.Write(toolkit.Text("c0")); err != nil {
				return err
			}
			if err := w.Progress(toolkit.Progress{Progress: 1, Total: float64(in.N)}); err != nil {
				return err
			}
			select {
			case <-f.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			for i := 1; i < in.N; i++ {
				if err := w.Write(toolkit.Text(fmt.Sprintf("c%d", i))); err != nil {
					return err
				}
			}
			return nil
		})))
	must(t, tk.Add(toolkit.Stream("block", "Writes a partial result and waits for its context to end.",
		func(ctx context.Context, in empty, w toolkit.Writer) error {
			if err := w.Write(toolkit.Text("partial")); err != nil {
				return err
			}
			if f.runs.Add(1) == 1 {
				close(f.started)
			}
			<-ctx.Done()
			f.observed <- ctx.Err()
			return ctx.Err()
		})))
	must(t, tk.Add(toolkit.Stream("big", "Writes one large text chunk and a large data block in two chunks.",
		func(ctx context.Context, in bigIn, w toolkit.Writer) error {
			if err := w.Write(toolkit.Text(bigText(in.TextBytes))); err != nil {
				return err
			}
			data := bigData(in.DataBytes)
			half := len(data) / 2
			for _, part := range [][]byte{data[:half], data[half:]} {
				c := toolkit.Data("application/octet-stream", part)
				c.Content[0].ID = "blob"
				if err := w.Write(c); err != nil {
					return err
				}
			}
			if in.AnonBytes > 0 {
				return w.Write(toolkit.Data("image/png", bigData(in.AnonBytes)))
			}
			return nil
		})))
	return f
}

func bigText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d: ünïcödé text to split ✓\n", i)
	}
	return b.String()[:n]
}

func bigData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// collect runs a call and returns its events, checking the invariants of
// every call: exactly one final, last, whose ID is the call ID.
func collect(t *testing.T, c toolkit.Caller, ctx context.Context, call toolkit.ToolCall) ([]toolkit.Event, *toolkit.Response) {
	t.Helper()
	var events []toolkit.Event
	finals := 0
	for ev := range c.Call(ctx, call) {
		if finals > 0 {
			t.Errorf("event after the final: %+v", ev)
		}
		if ev.Final != nil {
			finals++
		}
		events = append(events, ev)
	}
	if finals != 1 {
		t.Fatalf("%d finals, want exactly 1 (events %+v)", finals, events)
	}
	final := events[len(events)-1].Final
	if call.ID != "" && final.ID != call.ID {
		t.Errorf("final ID %q, want the call ID %q", final.ID, call.ID)
	}
	checkChunksMakeFinal(t, events, final)
	return events, final
}

// checkChunksMakeFinal checks that every transport yields the same kind of
// events: the chunk events, accumulated, are the final's content and
// state (a fast call over the bus too yields its content as a chunk).
func checkChunksMakeFinal(t *testing.T, events []toolkit.Event, final *toolkit.Response) {
	t.Helper()
	var acc toolkit.Accumulator
	for _, ev := range events {
		if ev.Chunk != nil {
			acc.Add(ev.Chunk)
		}
	}
	built := acc.Response(final.ID)
	got, _ := json.Marshal(built.Content)
	want, _ := json.Marshal(final.Content)
	if !bytes.Equal(got, want) || built.State != final.State {
		t.Errorf("the chunk events accumulate to %s %.200s, the final is %s %.200s", built.State, got, final.State, want)
	}
}

func timeoutCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("never happened: %s", what)
		panic("unreachable")
	}
}

// Run runs the whole suite against a transport.
func Run(t *testing.T, transport Transport) {
	RunConfig(t, Config{Transport: transport})
}

// Config is a transport and the group state of the toolkits it serves.
type Config struct {
	// State, when set, returns the GroupState of the suite's toolkit for
	// one test; it runs before Transport, with the same t. A fleet whose
	// callers list schemas by discovery shares its state (bus.KVState).
	// Nil means the toolkit's default, in memory.
	State func(t *testing.T) toolkit.GroupState
	// Transport serves the toolkit.
	Transport Transport
	// Unary says the transport delivers a call's output in one piece with
	// its final, and no partial output after a cancel (see Transport).
	Unary bool
}

// RunConfig runs the suite against cfg.Transport, with the group state of
// cfg.State.
func RunConfig(t *testing.T, cfg Config) {
	transport := cfg.Transport
	tests := []struct {
		name string
		fn   func(t *testing.T, f *fixture, c toolkit.Caller, unary bool)
	}{
		{"Echo", testEcho},
		{"ErrorsEndInOneFinal", testErrors},
		{"StreamingOrder", testStreamingOrder},
		{"Cancel", testCancel},
		{"Deadline", testDeadline},
		{"StopIterating", testStopIterating},
		{"Groups", testGroups},
		{"LargeOutput", testLargeOutput},
		{"Concurrent", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var state toolkit.GroupState
			if cfg.State != nil {
				state = cfg.State(t)
			}
			f := newFixture(t, state)
			tt.fn(t, f, transport(t, f.tk), cfg.Unary)
		})
	}
}

func testEcho(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	_, final := collect(t, c, timeoutCtx(t), toolkit.ToolCall{ID: "echo-1", Name: "echo", Input: map[string]any{"text": "héllo"}})
	if final.State != toolkit.StateSuccess || final.Code != "" || final.Text() != "héllo" {
		t.Fatalf("final = %+v, want success héllo", final)
	}
	resp := c.Invoke(timeoutCtx(t), toolkit.ToolCall{ID: "echo-2", Name: "echo", Input: map[string]any{"text": "again"}})
	if resp.ID != "echo-2" || resp.Text() != "again" {
		t.Fatalf("Invoke = %+v", resp)
	}
}

func testErrors(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	cases := []struct {
		name  string
		call  toolkit.ToolCall
		code  toolkit.Code
		state toolkit.State
		text  string
	}{
		{"unknown tool", toolkit.ToolCall{Name: "nope"}, toolkit.CodeNotFound, toolkit.StateError, "ToolNotFoundError: The tool named 'nope' doesn't exist."},
		{"invalid input", toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": 42}}, toolkit.CodeInvalidInput, toolkit.StateError, "Input validation failed for tool 'echo'"},
		{"missing input", toolkit.ToolCall{Name: "echo"}, toolkit.CodeInvalidInput, toolkit.StateError, "Input validation failed for tool 'echo'"},
		{"tool error", toolkit.ToolCall{Name: "fail"}, toolkit.CodeToolError, toolkit.StateError, "boom"},
		{"panic", toolkit.ToolCall{Name: "explode"}, toolkit.CodeInternal, toolkit.StateError, "kaboom"},
		{"group inactive", toolkit.ToolCall{Name: "secret", Session: "s-err"}, toolkit.CodeGroupInactive, toolkit.StateError, "ToolGroupInactiveError"},
		{"bad group in reset_tools", toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s-err", Input: map[string]any{"nope": true}}, toolkit.CodeInvalidInput, toolkit.StateError, "Invalid group name(s): nope"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.call.ID = fmt.Sprintf("err-%d", i)
			_, final := collect(t, c, timeoutCtx(t), tc.call)
			if final.Code != tc.code || final.State != tc.state || !strings.Contains(final.Text(), tc.text) {
				t.Fatalf("final = %+v, want %s/%s containing %q", final, tc.state, tc.code, tc.text)
			}
		})
	}
}

func testStreamingOrder(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	var texts []string
	var kinds []string
	events, final := func() ([]toolkit.Event, *toolkit.Response) {
		var events []toolkit.Event
		for ev := range c.Call(timeoutCtx(t), toolkit.ToolCall{ID: "stream-1", Name: "stream", Input: map[string]any{"n": 6}}) {
			events = append(events, ev)
			switch {
			case ev.Chunk != nil:
				kinds = append(kinds, "chunk")
				for _, b := range ev.Chunk.Content {
					texts = append(texts, b.Text)
				}
				if len(texts) == 1 && !unary {
					close(f.gate) // the first chunk reached the caller: let the tool go on
				}
			case ev.Progress != nil:
				kinds = append(kinds, "progress")
				if unary {
					close(f.gate) // the output comes in one piece: the progress is the sign of life
				}
			case ev.Final != nil:
				kinds = append(kinds, "final")
				return events, ev.Final
			}
		}
		return events, nil
	}()
	if final == nil {
		t.Fatalf("no final among %d events", len(events))
	}
	want := []string{"c0", "c1", "c2", "c3", "c4", "c5"}
	wantKinds := "chunk,progress,chunk,chunk,chunk,chunk,chunk,final"
	if unary {
		want, wantKinds = []string{"c0c1c2c3c4c5"}, "progress,chunk,final"
	}
	if strings.Join(texts, ",") != strings.Join(want, ",") {
		t.Fatalf("chunks %v, want %v in order", texts, want)
	}
	if got := strings.Join(kinds, ","); got != wantKinds {
		t.Fatalf("event order %s, want %s", got, wantKinds)
	}
	if final.State != toolkit.StateSuccess || final.Text() != strings.Join(want, "") {
		t.Fatalf("final = %+v", final)
	}
}

func testCancel(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	ctx, cancel := context.WithCancel(timeoutCtx(t))
	go func() {
		wait(t, f.started, "the tool started")
		cancel()
	}()
	_, final := collect(t, c, ctx, toolkit.ToolCall{ID: "cancel-1", Name: "block"})
	if final.State != toolkit.StateInterrupted || final.Code != toolkit.CodeInterrupted {
		t.Fatalf("final = %+v, want interrupted", final)
	}
	if unary && final.Text() == toolkit.InterruptedText {
		// no partial output: see Transport
	} else if !strings.HasPrefix(final.Text(), "partial") || !strings.Contains(final.Text(), toolkit.InterruptedText) {
		t.Fatalf("final text %q: want the partial output then the interrupt notice", final.Text())
	}
	if err := wait(t, f.observed, "the tool saw ctx.Done"); err == nil {
		t.Fatal("the tool's ctx ended without an error")
	}
}

func testDeadline(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	// The deadline is to pass while the tool runs. One that passes before
	// the tool started (a loaded machine) ends the call timeout without
	// it, which says nothing of what a running tool leaves: such a call
	// is made again with twice the time.
	var final *toolkit.Response
	for d, n := 300*time.Millisecond, 1; ; d, n = 2*d, n+1 {
		ran := f.runs.Load()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_, final = collect(t, c, ctx, toolkit.ToolCall{ID: fmt.Sprint("deadline-", n), Name: "block"})
		cancel()
		if final.State != toolkit.StateError || final.Code != toolkit.CodeTimeout {
			t.Fatalf("final = %+v, want error/timeout", final)
		}
		if f.runs.Load() > ran {
			break
		}
		if d > guard {
			t.Fatalf("the tool never started within its call's deadline, %v at last", d)
		}
		t.Logf("the deadline of %v passed before the tool started; again with %v", d, 2*d)
	}
	if !strings.HasPrefix(final.Text(), "partial") && !(unary && final.Text() == toolkit.TimeoutText) {
		t.Fatalf("final text %q: the partial output is lost", final.Text())
	}
	wait(t, f.observed, "the tool saw ctx.Done")
}

func testStopIterating(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	for range c.Call(timeoutCtx(t), toolkit.ToolCall{ID: "stop-1", Name: "stream", Input: map[string]any{"n": 3}}) {
		break // at the first event: the first chunk, or (unary) the progress
	}
	// The tool must end: in process its next Write fails, over the bus
	// its context is cancelled.
	wait(t, f.returned, "the tool returned after the caller stopped iterating")
}

func testGroups(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	ctx := timeoutCtx(t)
	const session = "s-groups"
	names := func(rev uint64) []string {
		schemas, err := c.SessionSchemas(ctx, session, rev)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range schemas {
			out = append(out, s.Function.Name)
		}
		return out
	}
	if got := strings.Join(names(0), ","); got != "reset_tools,echo,fail,explode,stream,block,big,probe" {
		t.Fatalf("schemas before activation (lab active by default): %s", got)
	}
	if _, final := collect(t, c, ctx, toolkit.ToolCall{ID: "g-1", Name: "secret", Session: session}); final.Code != toolkit.CodeGroupInactive {
		t.Fatalf("inactive group: %+v", final)
	}
	_, reset := collect(t, c, ctx, toolkit.ToolCall{ID: "g-2", Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"vault": true}})
	if reset.State != toolkit.StateSuccess || !strings.Contains(reset.Text(), "Handle with care.") {
		t.Fatalf("reset_tools: %+v", reset)
	}
	rev, ok := number(reset.Metadata[toolkit.MetaGroupsRevision])
	if !ok || rev == 0 {
		t.Fatalf("reset_tools metadata %v: no groups revision", reset.Metadata)
	}
	_, final := collect(t, c, ctx, toolkit.ToolCall{ID: "g-3", Name: "secret", Session: session, GroupsRevision: rev})
	if final.State != toolkit.StateSuccess || final.Text() != "the secret" {
		t.Fatalf("active group: %+v", final)
	}
	// Absolute: the final state is vault alone, lab (active by default)
	// is off.
	if got := strings.Join(names(rev), ","); got != "reset_tools,echo,fail,explode,stream,block,big,secret" {
		t.Fatalf("schemas after activation: %s", got)
	}
	if _, final := collect(t, c, ctx, toolkit.ToolCall{ID: "g-3b", Name: "probe", Session: session, GroupsRevision: rev}); final.Code != toolkit.CodeGroupInactive {
		t.Fatalf("lab after reset_tools named only vault: %+v", final)
	}
	// Unknown names are refused and change nothing (AgentScope 2.x).
	_, bad := collect(t, c, ctx, toolkit.ToolCall{ID: "g-5", Name: toolkit.MetaToolName, Session: session, GroupsRevision: rev,
		Input: map[string]any{"vault": false, "nope": true}})
	if bad.Code != toolkit.CodeInvalidInput || bad.Text() != "Invalid group name(s): nope. The current available groups are: vault, lab" {
		t.Fatalf("reset_tools with an unknown group: %s %q", bad.Code, bad.Text())
	}
	if _, final := collect(t, c, ctx, toolkit.ToolCall{ID: "g-6", Name: "secret", Session: session, GroupsRevision: rev}); final.State != toolkit.StateSuccess {
		t.Fatalf("vault after a refused reset_tools: %+v", final)
	}
	// {} deactivates every group, the default-active one too: an empty
	// state is stored, not taken for no state.
	_, off := collect(t, c, ctx, toolkit.ToolCall{ID: "g-7", Name: toolkit.MetaToolName, Session: session, GroupsRevision: rev, Input: map[string]any{}})
	if off.State != toolkit.StateSuccess || off.Text() != "All tool groups are currently deactivated." {
		t.Fatalf("reset_tools {}: %+v", off)
	}
	rev, ok = number(off.Metadata[toolkit.MetaGroupsRevision])
	if !ok || rev == 0 {
		t.Fatalf("reset_tools {} metadata %v: no groups revision", off.Metadata)
	}
	if got := strings.Join(names(rev), ","); got != "reset_tools,echo,fail,explode,stream,block,big" {
		t.Fatalf("schemas after {}: %s", got)
	}
	for _, tool := range []string{"secret", "probe"} {
		if _, final := collect(t, c, ctx, toolkit.ToolCall{ID: "g-8-" + tool, Name: tool, Session: session, GroupsRevision: rev}); final.Code != toolkit.CodeGroupInactive {
			t.Fatalf("%s after reset_tools {}: %+v", tool, final)
		}
	}
	// Another session is unaffected.
	if _, final := collect(t, c, ctx, toolkit.ToolCall{ID: "g-4", Name: "secret", Session: "other"}); final.Code != toolkit.CodeGroupInactive {
		t.Fatalf("other session: %+v", final)
	}
}

func number(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case int64:
		return uint64(x), x >= 0
	case int:
		return uint64(x), x >= 0
	case float64:
		return uint64(x), x >= 0
	}
	return 0, false
}

func testLargeOutput(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	const textBytes, dataBytes, anonBytes = 3 << 20, 3 << 19, 3 << 19
	_, final := collect(t, c, timeoutCtx(t), toolkit.ToolCall{ID: "big-1", Name: "big", Input: map[string]any{"text_bytes": textBytes, "data_bytes": dataBytes, "anon_bytes": anonBytes}})
	if final.State != toolkit.StateSuccess {
		t.Fatalf("final state %s code %s: %.200s", final.State, final.Code, final.Text())
	}
	// Split pieces must merge back into exactly the blocks the tool wrote:
	// one text block, the "blob" data block (two chunks under one ID) and
	// the data block without an ID.
	if len(final.Content) != 3 {
		t.Fatalf("got %d blocks, want 3 (text, blob, anonymous data)", len(final.Content))
	}
	if final.Text() != bigText(textBytes) {
		t.Fatalf("text: got %d bytes, want the %d written (never truncated)", len(final.Text()), textBytes)
	}
	for i, want := range []struct {
		id, media string
		data      []byte
	}{
		{"blob", "application/octet-stream", bigData(dataBytes)},
		{"", "image/png", bigData(anonBytes)},
	} {
		b := final.Content[i+1]
		if b.Type != toolkit.BlockData || b.MediaType != want.media || (want.id != "" && b.ID != want.id) {
			t.Fatalf("block %d: type %s id %q media %q; want data %q %q", i+1, b.Type, b.ID, b.MediaType, want.id, want.media)
		}
		raw, err := base64.StdEncoding.DecodeString(b.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, want.data) {
			t.Fatalf("block %d: got %d bytes, want the %d written", i+1, len(raw), len(want.data))
		}
	}
}

func testConcurrent(t *testing.T, f *fixture, c toolkit.Caller, unary bool) {
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("msg-%d", i)
			resp := c.Invoke(timeoutCtx(t), toolkit.ToolCall{ID: fmt.Sprintf("conc-%d", i), Name: "echo", Input: map[string]any{"text": text}})
			if resp.Text() != text || resp.ID != fmt.Sprintf("conc-%d", i) {
				t.Errorf("call %d: %+v", i, resp)
			}
		}()
	}
	wg.Wait()
}

// OverNATS is the Config of a transport over a real NATS server: every
// test gets an embedded server of its own (in process, or on a loopback
// port with tcp), its toolkit keeps group state in the server's KV bucket
// (bus.KVState, where fleet-wide listings read it), and serve puts the
// toolkit on that server and returns the Caller that reaches it.
func OverNATS(tcp bool, serve func(t *testing.T, s *embedded.Server, tk *toolkit.Toolkit) toolkit.Caller) Config {
	var servers sync.Map // *testing.T → the test's server
	return Config{
		State: func(t *testing.T) toolkit.GroupState {
			s := natstest.Embedded(t, tcp)
			servers.Store(t, s)
			t.Cleanup(func() { servers.Delete(t) })
			st, err := bus.NewKVState(natstest.Ctx(t), natstest.JS(t, natstest.Connect(t, s)), nil)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		Transport: func(t *testing.T, tk *toolkit.Toolkit) toolkit.Caller {
			v, _ := servers.Load(t)
			return serve(t, v.(*embedded.Server), tk)
		},
	}
}
