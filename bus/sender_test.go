package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// TestFinalThatCannotBeSent: a final the worker cannot encode, or that is
// over max_payload only because of its merged metadata, still ends the
// call with an internal final from the worker, never with worker_lost;
// the output already streamed is kept.
func TestFinalThatCannotBeSent(t *testing.T) {
	big := strings.Repeat("m", 400<<10)
	partial := strings.Repeat("p", 40<<10)
	tests := []struct {
		name     string
		tool     toolkit.Handler
		wantText string // a prefix of the result's text
		wantMeta []string
		success  bool
	}{
		{
			name: "unencodable metadata, fast call",
			tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"f": func() {}}})
			},
			// Held until the final, which cannot be encoded whole: streamed
			// instead, the chunk fails alone.
			wantText: "InternalError: part of the tool's output could not be delivered",
		},
		{
			name: "unencodable metadata, streamed chunk",
			tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				w.Write(toolkit.Text(partial)) // over the hold limit: streaming from here
				return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"f": make(chan int)}})
			},
			wantText: partial + "InternalError: part of the tool's output could not be delivered",
		},
		{
			name: "metadata merged over max_payload",
			tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				for i := range 4 {
					if err := w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: fmt.Sprint(i)}}, Metadata: map[string]any{fmt.Sprint("k", i): big}}); err != nil {
						return err
					}
					time.Sleep(20 * time.Millisecond)
				}
				return nil
			},
			wantText: "0123",
			wantMeta: []string{"k0", "k1", "k2", "k3"},
			success:  true, // the final leaves out what the chunks carried
		},
		{
			name: "metadata whose encoder panics",
			tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"p": panicky{}}})
			},
			// The final cannot be encoded whole: streamed instead, the
			// chunk fails alone.
			wantText: "InternalError: part of the tool's output could not be delivered: publishing a chunk frame: wire: encoding a value panicked: encoder exploded",
		},
		{
			name: "error metadata over max_payload",
			tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return &toolkit.Error{Code: toolkit.CodeToolError, Message: "failed", Metadata: map[string]any{"a": big, "b": big, "c": big}}
			},
			wantText: "failedInternalError: the tool's final response could not be encoded",
		},
	}
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	for i, tt := range tests {
		mustAdd(t, tk, toolkit.Raw(fmt.Sprint("t", i), tt.name, nil, tt.tool))
	}
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	// A long stall timeout: a lost final would show as a hang up to the
	// guard, and as worker_lost after it.
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: guard})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: fmt.Sprint("t", i)})
			if tt.success && (r.State != toolkit.StateSuccess || r.Text() != tt.wantText) ||
				!tt.success && (r.Code != toolkit.CodeInternal || r.State != toolkit.StateError) {
				t.Fatalf("final = %s %s %.200q", r.State, r.Code, r.Text())
			}
			if !strings.HasPrefix(r.Text(), tt.wantText) {
				t.Fatalf("text = %.300q, want prefix %q", r.Text(), tt.wantText)
			}
			if r.Metadata[wire.MetaWorker] != "w1" {
				t.Fatalf("metadata %v: the final did not come from the worker", r.Metadata[wire.MetaWorker])
			}
			for _, k := range tt.wantMeta {
				if r.Metadata[k] != big {
					t.Fatalf("metadata %q of the chunks was not kept", k)
				}
			}
		})
	}
}

// panicState is a GroupState whose Load panics.
type panicState struct{ toolkit.MemoryState }

func (*panicState) Load(context.Context, string, uint64) ([]string, uint64, bool, error) {
	panic("state exploded")
}

// TestPreludePanic: a panic in the toolkit's prelude (here the group
// state) ends the call with an internal final and the worker keeps
// serving.
func TestPreludePanic(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(&toolkit.Options{State: &panicState{}})
	mustAdd(t, tk, echoTool())
	if err := tk.AddGroup(toolkit.Group{Name: "g", Description: "A group."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("grouped", "In a group.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }), toolkit.InGroup("g"))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: guard})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "grouped", Session: "s"})
	if r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "state exploded") {
		t.Fatalf("final = %+v, want internal naming the panic", r)
	}
	r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "alive"}})
	if r.Text() != "alive" {
		t.Fatalf("the worker did not survive: %+v", r)
	}
}

var _ = errors.New

// TestProgressOverMaxPayload: a progress report too large for one message
// arrives with its Message cut and marked, and the call goes on.
func TestProgressOverMaxPayload(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	huge := strings.Repeat("ü", 1<<20) // 2 MiB: over the default max_payload
	mustAdd(t, tk, toolkit.Stream("loud", "Reports a huge progress message.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		if err := w.Progress(toolkit.Progress{Progress: 1, Total: 2, Message: huge}); err != nil {
			return err
		}
		// Over the hold limit: the held items go out now (a call that ends
		// within the flush delay would send only its final).
		return w.Write(toolkit.Text(strings.Repeat("d", 40<<10)))
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	var progress []*toolkit.Progress
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "loud"}) {
		if ev.Progress != nil {
			progress = append(progress, ev.Progress)
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final.Text() != strings.Repeat("d", 40<<10) {
		t.Fatalf("final = %s %s %.100q", final.State, final.Code, final.Text())
	}
	if len(progress) != 1 {
		t.Fatalf("%d progress events, want 1", len(progress))
	}
	p := progress[0]
	if p.Progress != 1 || p.Total != 2 || !strings.HasSuffix(p.Message, bus.TruncatedMark) ||
		!strings.HasPrefix(huge, strings.TrimSuffix(p.Message, bus.TruncatedMark)) || len(p.Message) > 1100 {
		t.Fatalf("progress %v %v with a %d-byte message %.40q…, want it cut and marked", p.Progress, p.Total, len(p.Message), p.Message)
	}
}

// panicky is a metadata value whose msgpack encoder panics.
type panicky struct{}

func (panicky) EncodeMsgpack(*msgpack.Encoder) error { panic("encoder exploded") }

// TestResultOverMaxPayload: a function tool's result (accumulated for
// the final, never held as a chunk) over max_payload reaches the caller
// whole, streamed in pieces that fit.
func TestResultOverMaxPayload(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	huge := strings.Repeat("ü", 1<<20) + "end" // 2 MiB: over the default max_payload
	mustAdd(t, tk, toolkit.Func("huge", "Returns 2 MiB of text.", func(ctx context.Context, in struct{}) (string, error) {
		return huge, nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	chunks := 0
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "huge"}) {
		if ev.Chunk != nil {
			chunks++
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final.State != toolkit.StateSuccess || final.Text() != huge {
		t.Fatalf("final %s %s with %d bytes of text, want the whole result", final.State, final.Code, len(final.Text()))
	}
	if chunks < 2 {
		t.Fatalf("%d chunk events: the result should have been streamed in pieces", chunks)
	}
}

// TestResultAfterMiddleware: a function tool's result reaches the caller
// whatever a middleware does after the tool returned: report progress and
// log, take longer than the flush delay, or fail with a long message.
func TestResultAfterMiddleware(t *testing.T) {
	s := natstest.Embedded(t, false)
	after := map[string]func(w toolkit.Writer) error{
		"progress then log": func(w toolkit.Writer) error {
			w.Progress(toolkit.Progress{Progress: 1, Total: 1, Message: "done"})
			return toolkit.Log(w, toolkit.LogMessage{Level: "info", Data: "finished"})
		},
		"progress then slow post-processing": func(w toolkit.Writer) error {
			w.Progress(toolkit.Progress{Progress: 1, Total: 1, Message: "done"})
			time.Sleep(30 * time.Millisecond) // past FlushDelay
			return nil
		},
		"an error with a long message": func(w toolkit.Writer) error {
			return toolkit.Errorf(toolkit.CodeToolError, "post-check failed: %s", strings.Repeat("x", 40<<10))
		},
	}
	for name, then := range after {
		t.Run(name, func(t *testing.T) {
			tk := toolkit.New(nil)
			mustAdd(t, tk, echoTool())
			tk.Use(func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
					if err := next(ctx, c, w); err != nil {
						return err
					}
					return then(w)
				}
			})
			serve(t, natstest.Connect(t, s), tk, nil)
			c := newClient(t, natstest.Connect(t, s), nil)
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "RESULT"}})
			if !strings.HasPrefix(r.Text(), "RESULT") {
				t.Fatalf("final %s %s %.80q: the tool's result is missing", r.State, r.Code, r.Text())
			}
		})
	}
}

// TestResultThenErrorRacesTheFlush: a middleware's error right after the
// result, with a flush due at once: the result is in the final every time.
func TestResultThenErrorRacesTheFlush(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
			if err := next(ctx, c, w); err != nil {
				return err
			}
			return toolkit.Errorf(toolkit.CodeToolError, "post-check failed")
		}
	})
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{FlushDelay: time.Microsecond})
	c := newClient(t, natstest.Connect(t, s), nil)
	for i := range 300 {
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "RESULT"}})
		if !strings.HasPrefix(r.Text(), "RESULT") {
			t.Fatalf("call %d: final %.80q lost the tool's result", i, r.Text())
		}
	}
}

// TestFastCallMetadataOverMaxPayload: chunks written at once, each with
// metadata that fits but together too much for one final: they are
// streamed with their metadata, and the final leaves it out.
func TestFastCallMetadataOverMaxPayload(t *testing.T) {
	s := natstest.Embedded(t, false)
	big := strings.Repeat("m", 400<<10)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("meta", "Three chunks with metadata.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for i := range 3 {
			if err := w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: fmt.Sprint(i)}}, Metadata: map[string]any{fmt.Sprint("k", i): big}}); err != nil {
				return err
			}
		}
		return nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: guard})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "meta"})
	if r.State != toolkit.StateSuccess || r.Text() != "012" || r.Metadata["k2"] != big {
		t.Fatalf("final %s %s %.120q", r.State, r.Code, r.Text())
	}
}

// TestBadChunkInABurst: a chunk that cannot be encoded fails alone; the
// chunks of its burst before it reach the caller, also when the burst is
// still held at the final (which then cannot be encoded whole: it used to
// end the call with that error alone, the good chunks lost).
func TestBadChunkInABurst(t *testing.T) {
	for name, hold := range map[string]time.Duration{"sent before the final": 0, "held until the final": time.Hour} {
		t.Run(name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			tk := toolkit.New(nil)
			mustAdd(t, tk, toolkit.Raw("bad", "Two good chunks, then a bad one.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				w.Write(toolkit.Text("good1 "))
				w.Write(toolkit.Text("good2 "))
				w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"f": make(chan int)}})
				if hold == 0 {
					time.Sleep(20 * time.Millisecond) // the burst leaves before the final, mostly
				}
				return nil
			}))
			serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{FlushDelay: hold})
			c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: guard})
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "bad"})
			if !strings.HasPrefix(r.Text(), "good1 good2 InternalError") || r.Code != toolkit.CodeInternal {
				t.Fatalf("final %s %.120q, want the good chunks, then the internal error", r.Code, r.Text())
			}
		})
	}
}

// TestHeldItemsBounded: what a tool sends within the worker's hold
// (FlushDelay) counts against the hold's bound whatever it is: progress
// reports and empty chunks were held without bound until the hold ended,
// so a tool reporting in a loop grew the worker's memory for as long as
// FlushDelay. Here the hold lasts an hour: the tool sends a few bounds'
// worth, then waits until its caller has heard something.
func TestHeldItemsBounded(t *testing.T) {
	const n = 2000 // 64 bytes at least each: four times the 32 KiB bound
	msg := strings.Repeat("x", 1024)
	sends := map[string]func(w toolkit.Writer, i int) error{
		"progress": func(w toolkit.Writer, i int) error {
			return w.Progress(toolkit.Progress{Progress: float64(i), Message: msg})
		},
		"empty progress": func(w toolkit.Writer, i int) error {
			return w.Progress(toolkit.Progress{Progress: float64(i)})
		},
		"empty chunks": func(w toolkit.Writer, i int) error {
			return w.Write(toolkit.Chunk{})
		},
	}
	for name, send := range sends {
		t.Run(name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			heard := make(chan struct{})
			tk := toolkit.New(nil)
			mustAdd(t, tk, toolkit.Stream("flood", "Send n items, then wait until the caller heard one.", func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
				for i := range n {
					if err := send(w, i); err != nil {
						return err
					}
				}
				select {
				case <-heard:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(guard):
					return fmt.Errorf("%d sent, none reached the caller: all held", n)
				}
			}))
			serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{FlushDelay: time.Hour})
			c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 2 * guard})
			var final *toolkit.Response
			for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "flood"}) {
				if (ev.Progress != nil || ev.Chunk != nil) && !stopped(heard) {
					close(heard)
				}
				if ev.Final != nil {
					final = ev.Final
				}
			}
			if final == nil || final.State != toolkit.StateSuccess {
				t.Fatalf("final %+v, want success once the caller heard something", final)
			}
		})
	}
}

func stopped(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
