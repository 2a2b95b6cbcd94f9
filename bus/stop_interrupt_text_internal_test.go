package bus

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopInterruptSaysWorkerStopped: a worker stopped past its grace
// period interrupts its running call, and answers interrupted a call it
// took and could pass on to no other worker; both finals told the model
// the call had been interrupted by the user (AgentScope's text for a
// user's interrupt). They say the worker serving the call shut down; a
// caller's cancel keeps AgentScope's text.
func TestStopInterruptSaysWorkerStopped(t *testing.T) {
	s := natstest.Embedded(t, false)
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	started := make(chan string, 4)
	tools := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAddT(t, tk, toolkit.Stream("block", "Writes, then waits to be interrupted.", func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			if err := w.Write(toolkit.Text("partial")); err != nil {
				return err
			}
			started <- "block"
			<-ctx.Done()
			return ctx.Err()
		}))
		mustAddT(t, tk, toolkit.Func("echo", "Echoes.", func(ctx context.Context, in struct{}) (string, error) {
			started <- "echo"
			return "echo", nil
		}))
		return tk
	}
	workerStopped := func(what, text string) {
		t.Helper()
		if strings.Contains(text, "by the user") || !strings.Contains(text, "worker") || !strings.Contains(text, "shut down") {
			t.Errorf("%s: %q, want it to say the worker serving the call shut down, not the user", what, text)
		}
	}
	ctx := natstest.Ctx(t)

	t.Run("caller cancels", func(t *testing.T) {
		serve(t, natstest.Connect(t, s), tools(), &WorkerOptions{Instance: "w0", AnnounceInterval: -1})
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			<-started
			cancel()
		}()
		r := c.Invoke(cctx, toolkit.ToolCall{ID: "cancel-1", Name: "block"})
		if r.Code != toolkit.CodeInterrupted || r.Text() != "partial"+toolkit.InterruptedText {
			t.Errorf("a caller's cancel: %s %q, want interrupted with the partial output and %q", r.Code, r.Text(), toolkit.InterruptedText)
		}
		if r.Metadata[wire.MetaDrained] != nil {
			t.Errorf("a caller's cancel is marked as its worker's stop: %v", r.Metadata)
		}
	})

	t.Run("running past the grace", func(t *testing.T) {
		w := serve(t, natstest.Connect(t, s), tools(), &WorkerOptions{Instance: "w1", AnnounceInterval: -1})
		res := make(chan *toolkit.Response, 1)
		go func() { res <- c.Invoke(ctx, toolkit.ToolCall{ID: "grace-1", Name: "block"}) }()
		<-started
		grace, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		w.Stop(grace)
		r := <-res
		if r.Code != toolkit.CodeInterrupted {
			t.Fatalf("a call outliving the grace: %s %q, want interrupted", r.Code, r.Text())
		}
		text, ok := strings.CutPrefix(r.Text(), "partial")
		if !ok {
			t.Fatalf("a call outliving the grace: %q lost its partial output", r.Text())
		}
		workerStopped("a call outliving the grace", text)
		if r.Metadata[wire.MetaDrained] != true {
			t.Errorf("a call outliving the grace: metadata %v, want %s", r.Metadata, wire.MetaDrained)
		}
	})

	t.Run("taken, passed on to nobody", func(t *testing.T) {
		// As TestStopPastGraceRunsNoCallTakenBefore, with no other
		// worker: the call passed on comes back unserved and the
		// stopping worker answers it interrupted without running it.
		w := serve(t, natstest.Connect(t, s), tools(), &WorkerOptions{Instance: "w2", AnnounceInterval: -1})
		taken := make(chan struct{})
		var once sync.Once
		w.afterAccept = func(*sender) {
			once.Do(func() {
				close(taken)
				natstest.WaitFor(t, "the stop to interrupt", func() bool {
					w.mu.Lock()
					defer w.mu.Unlock()
					return w.interrupting
				})
			})
		}
		res := make(chan *toolkit.Response, 1)
		go func() { res <- c.Invoke(ctx, toolkit.ToolCall{ID: "taken-1", Name: "echo"}) }()
		<-taken
		over, cancel := context.WithCancel(ctx)
		cancel()
		go w.Stop(over)
		r := <-res
		select {
		case <-started:
			t.Fatalf("the call ran on the stopping worker: %s %q", r.Code, r.Text())
		default:
		}
		if r.Code != toolkit.CodeInterrupted {
			t.Fatalf("a call taken at the stop, no other worker: %s %q, want interrupted", r.Code, r.Text())
		}
		workerStopped("a call taken at the stop", r.Text())
		if r.Metadata[wire.MetaDrained] != true {
			t.Errorf("a call taken at the stop: metadata %v, want %s", r.Metadata, wire.MetaDrained)
		}
	})
}
