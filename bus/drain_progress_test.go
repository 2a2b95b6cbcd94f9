package bus_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestResentProgressNeverGoesBack: a read-only tool's call reports
// progress 3 of 4 on worker a, whose stop cuts it (past its grace); the
// client sends it again to worker b, which reports 1, 2, 3 and 4 of 4.
// The caller saw the first attempt's 3, then the second attempt's 1, 2
// and 3 again (each sent: a log message follows it): its progress went back (an MCP client is told progress
// only ever grows). It now sees 3, then 4: the resent attempt's reports
// up to the highest it saw are left out, the rest come as they are.
func TestResentProgressNeverGoesBack(t *testing.T) {
	s := natstest.Embedded(t, false)
	entered := make(chan string, 2)
	tools := func(instance string) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("scan", "Scans.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			entered <- instance
			if instance == "a" {
				if err := w.Progress(toolkit.Progress{Progress: 3, Total: 4, Message: "a 3"}); err != nil {
					return err
				}
				<-ctx.Done()
				return ctx.Err()
			}
			for i := 1; i <= 4; i++ {
				if err := w.Progress(toolkit.Progress{Progress: float64(i), Total: 4, Message: fmt.Sprintf("b %d", i)}); err != nil {
					return err
				}
				// A log message sends the report held before it (a
				// fast call's progress is folded into its final).
				if err := toolkit.Log(w, toolkit.LogMessage{Level: "info", Data: i}); err != nil {
					return err
				}
			}
			return w.Write(toolkit.Text("scanned by " + instance))
		}), toolkit.ReadOnly())
		return tk
	}
	a := serve(t, natstest.Connect(t, s), tools("a"), &bus.WorkerOptions{Instance: "a"})
	c := newClient(t, natstest.Connect(t, s), nil)
	ctx := ctxT(t)

	reported, res := progressCall(c, ctx, toolkit.ToolCall{ID: "scan-1", Name: "scan"})
	if got := <-entered; got != "a" {
		t.Fatalf("the tool was entered on %s, want a", got)
	}
	<-reported
	f, err := c.Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, natstest.Connect(t, s), tools("b"), &bus.WorkerOptions{Instance: "b"})
	natstest.WaitFor(t, "the client to hear of worker b", func() bool {
		return slices.ContainsFunc(f.Instances(), func(in discovery.Instance) bool { return in.ID == "b" })
	})
	grace, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	a.Stop(grace)
	r := <-res
	if r.final == nil || r.final.Code != "" || r.final.Text() != "scanned by b" || fmt.Sprint(r.final.Metadata[wire.MetaAttempts]) != "2" {
		t.Fatalf("the call ended %+v, want b's result after 2 attempts", r.final)
	}
	if want := []string{"a 3", "b 4"}; !slices.Equal(r.progress, want) {
		t.Fatalf("the caller saw progress %q, want %q (never going back, the resent attempt's new reports kept)", r.progress, want)
	}
}

// TestRedeliveredProgressNeverGoesBack: as TestResentProgressNeverGoesBack
// for a durable call, which the queue delivers again when its worker is
// lost: the caller saw the lost delivery's 3 of 4, then the next
// delivery's 1, 2 and 3 again; it now sees 3, then 4.
func TestRedeliveredProgressNeverGoesBack(t *testing.T) {
	s := natstest.Embedded(t, false)
	const ackWait = time.Second
	started := make(chan struct{}, 2)
	newTK := func(doomed bool) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("put", "Puts.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				started <- struct{}{}
				if doomed {
					if err := w.Progress(toolkit.Progress{Progress: 3, Total: 4, Message: "doomed 3"}); err != nil {
						return err
					}
					<-ctx.Done() // the worker dies meanwhile
					return ctx.Err()
				}
				for i := 1; i <= 4; i++ {
					if err := w.Progress(toolkit.Progress{Progress: float64(i), Total: 4, Message: fmt.Sprintf("heir %d", i)}); err != nil {
						return err
					}
					if err := toolkit.Log(w, toolkit.LogMessage{Level: "info", Data: i}); err != nil {
						return err
					}
				}
				return w.Write(toolkit.Text("done"))
			}), toolkit.WithIdempotency(toolkit.Idempotent))
		return tk
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	w1, nc1 := durableWorker(t, s, newTK(true), ackWait, "doomed")
	reported, res := progressCall(c, ctxT(t), toolkit.ToolCall{ID: "k-put", Name: "put", Durable: true})
	<-started
	<-reported
	nc1.Close() // the worker is gone without a final
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	w1.Stop(gone)
	durableWorker(t, s, newTK(false), ackWait, "heir")
	r := <-res
	if r.final == nil || r.final.Code != "" || r.final.Text() != "done" || fmt.Sprint(r.final.Metadata[wire.MetaAttempts]) != "2" {
		t.Fatalf("the call ended %+v, want the heir's result on delivery 2", r.final)
	}
	if want := []string{"doomed 3", "heir 4"}; !slices.Equal(r.progress, want) {
		t.Fatalf("the caller saw progress %q, want %q (never going back, the new delivery's new reports kept)", r.progress, want)
	}
}

// progressResult is what a caller saw of a call: its progress reports'
// messages, in order, and its final.
type progressResult struct {
	progress []string
	final    *toolkit.Response
}

// progressCall makes call through c on a goroutine of its own, which
// closes reported at the first progress report and sends what it saw on
// res once the call ends.
func progressCall(c *bus.Client, ctx context.Context, call toolkit.ToolCall) (reported chan struct{}, res chan progressResult) {
	reported, res = make(chan struct{}), make(chan progressResult, 1)
	go func() {
		var r progressResult
		for ev := range c.Call(ctx, call) {
			if ev.Progress != nil {
				if len(r.progress) == 0 {
					close(reported)
				}
				r.progress = append(r.progress, ev.Progress.Message)
			}
			if ev.Final != nil {
				r.final = ev.Final
			}
		}
		res <- r
	}()
	return reported, res
}
