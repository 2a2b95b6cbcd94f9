package bus_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDrainedCallSentAgain: of two workers serving a tool, the one
// running a call stops (a rolling deploy) and its grace ends before the
// call does. A read-only or idempotent tool's call ended interrupted
// ("the worker serving it shut down"), though the other worker could run
// it again, as the client does a lost worker's: the client sends it again
// now, under the same rules (nothing of it reached the caller, attempts
// remain), and it ends with the other worker's result. A call of a tool
// that may have effects, and one whose output reached its caller, still
// end interrupted with toolkit.DrainedText, and so does a read-only
// tool's call with no other worker left to send it to. A tool that
// ignores its interrupt is abandoned (WorkerOptions.AbandonAfter) and
// its call ends the same way: the stop's notice, all its caller heard of
// it, does not count as output that reached the caller (it came as a
// chunk, and such a call ended interrupted though it could have been
// sent again).
func TestDrainedCallSentAgain(t *testing.T) {
	cases := []struct {
		name   string
		opts   []toolkit.Option
		stream bool // the tool writes a chunk, which reaches the caller, before the stop
		alone  bool // no other worker comes up
		ignore bool // the tool ignores its interrupt: it is abandoned
		report bool // the tool reports progress, which reaches the caller, before the stop
		again  bool
	}{
		{name: "read-only", opts: []toolkit.Option{toolkit.ReadOnly()}, again: true},
		{name: "idempotent", opts: []toolkit.Option{toolkit.WithIdempotency(toolkit.Idempotent)}, again: true},
		{name: "may have effects"},
		{name: "read-only, output sent", opts: []toolkit.Option{toolkit.ReadOnly()}, stream: true},
		{name: "read-only, no other worker", opts: []toolkit.Option{toolkit.ReadOnly()}, alone: true},
		{name: "read-only, abandoned", opts: []toolkit.Option{toolkit.ReadOnly()}, ignore: true, again: true},
		{name: "idempotent, abandoned", opts: []toolkit.Option{toolkit.WithIdempotency(toolkit.Idempotent)}, ignore: true, again: true},
		{name: "may have effects, abandoned", ignore: true},
		{name: "read-only, progress reported", opts: []toolkit.Option{toolkit.ReadOnly()}, report: true, again: true},
		{name: "read-only, progress reported, abandoned", opts: []toolkit.Option{toolkit.ReadOnly()}, report: true, ignore: true, again: true},
		{name: "read-only, output sent, abandoned", opts: []toolkit.Option{toolkit.ReadOnly()}, stream: true, ignore: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			entered := make(chan string, 4)
			release := make(chan struct{}) // an abandoned tool returns at the end
			t.Cleanup(func() { close(release) })
			tools := func(instance string, block bool) *toolkit.Toolkit {
				tk := toolkit.New(nil)
				mustAdd(t, tk, toolkit.Raw("scan", "Scans.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					entered <- instance + " " + call.Key()
					if !block {
						return w.Write(toolkit.Text("scanned by " + instance))
					}
					if tc.stream {
						if err := w.Write(toolkit.Text("partial")); err != nil {
							return err
						}
					}
					if tc.report {
						if err := w.Progress(toolkit.Progress{Progress: 1, Total: 2, Message: "half"}); err != nil {
							return err
						}
					}
					<-ctx.Done()
					if tc.ignore {
						<-release
					}
					return ctx.Err()
				}), tc.opts...)
				return tk
			}
			a := serve(t, natstest.Connect(t, s), tools("a", true), &bus.WorkerOptions{Instance: "a", AbandonAfter: 50 * time.Millisecond})
			c := newClient(t, natstest.Connect(t, s), nil)
			ctx := ctxT(t)

			res := make(chan *toolkit.Response, 1)
			chunked := make(chan struct{})
			reported := make(chan struct{})
			var reportedOnce sync.Once
			go func() {
				var final *toolkit.Response
				var text string
				for ev := range c.Call(ctx, toolkit.ToolCall{ID: "scan-1", Name: "scan"}) {
					if ev.Chunk != nil {
						if text == "" {
							close(chunked)
						}
						for _, b := range ev.Chunk.Content {
							text += b.Text
						}
					}
					if ev.Progress != nil {
						reportedOnce.Do(func() { close(reported) })
					}
					if ev.Final != nil {
						final = ev.Final
					}
				}
				if final != nil && final.Text() != text {
					t.Errorf("the chunk events accumulate to %q, the final says %q", text, final.Text())
				}
				res <- final
			}()
			if got := <-entered; got != "a scan-1" {
				t.Fatalf("the tool was entered as %q, want on a with key scan-1", got)
			}
			if tc.stream {
				<-chunked
			}
			if tc.report {
				<-reported
			}
			f, err := c.Fleet(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.alone {
				serve(t, natstest.Connect(t, s), tools("b", false), &bus.WorkerOptions{Instance: "b"})
				natstest.WaitFor(t, "the client to hear of worker b", func() bool {
					return slices.ContainsFunc(f.Instances(), func(in discovery.Instance) bool { return in.ID == "b" })
				})
			}

			grace, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			a.Stop(grace)
			r := <-res
			if r == nil {
				t.Fatal("no final")
			}
			if tc.again {
				if r.ID != "scan-1" || r.Code != "" || r.Text() != "scanned by b" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" || r.Metadata[wire.MetaWorker] != "b" {
					t.Fatalf("%s: the call whose worker stopped past its grace ended %s %q %v, want b's result after 2 attempts", tc.name, r.Code, r.Text(), r.Metadata)
				}
				if got := <-entered; got != "b scan-1" {
					t.Errorf("the attempt sent again was entered as %q, want on b with the first id as key", got)
				}
				return
			}
			want := toolkit.DrainedText
			if tc.stream {
				want = "partial" + want
			}
			// Alone, the call may be sent again (the retry finds no
			// worker: its first attempt's final is the call's) or not (the
			// client heard the stopping worker's goodbye first: nobody
			// serves the tool).
			once := r.Metadata[wire.MetaAttempts] == nil || tc.alone && fmt.Sprint(r.Metadata[wire.MetaAttempts]) == "2"
			if r.Code != toolkit.CodeInterrupted || r.Text() != want || r.Metadata[wire.MetaDrained] != true || !once {
				t.Fatalf("%s: the call whose worker stopped past its grace ended %s %q %v, want interrupted with %q and drained, sent once", tc.name, r.Code, r.Text(), r.Metadata, want)
			}
			select {
			case got := <-entered:
				t.Errorf("the call was run again (%s)", got)
			default:
			}
		})
	}
}
