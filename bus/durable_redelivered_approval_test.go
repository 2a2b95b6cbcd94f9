package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRedeliveredToolsOwnApprovalRequired: a durable call's worker dies
// mid-run and the queue delivers the call again. When that delivery ends
// approval_required from the permission checks (a middleware, before the
// tool), its approval was used by the lost delivery and the call ends
// worker_lost; when the tool itself answers approval_required, it ran, and
// its answer is the call's.
func TestRedeliveredToolsOwnApprovalRequired(t *testing.T) {
	s := natstest.Embedded(t, false)
	const ackWait = time.Second
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	for _, tt := range []struct {
		name  string
		guard bool // the second delivery's approval_required is a middleware's
		want  toolkit.Code
		runs  int32
	}{
		{"tool", false, toolkit.CodeApprovalRequired, 2},
		{"guard", true, toolkit.CodeWorkerLost, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			started := make(chan struct{}, 4)
			var runs atomic.Int32
			newTK := func(heir bool) *toolkit.Toolkit {
				tk := toolkit.New(nil)
				if heir && tt.guard {
					tk.Use(func(next toolkit.Handler) toolkit.Handler {
						return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
							return toolkit.NewError(toolkit.CodeApprovalRequired, "ApprovalRequiredError: approve first")
						}
					})
				}
				mustAdd(t, tk, toolkit.Raw("sync", "Sync, asking upstream.", map[string]any{"type": "object", "properties": map[string]any{}},
					func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
						runs.Add(1)
						started <- struct{}{}
						if !heir {
							<-ctx.Done() // the worker dies meanwhile
							return ctx.Err()
						}
						return toolkit.Errorf(toolkit.CodeApprovalRequired, "the upstream wants an approval")
					}), toolkit.WithIdempotency(toolkit.Idempotent))
				return tk
			}
			w1, nc1 := durableWorker(t, s, newTK(false), ackWait, "doomed-"+tt.name)
			done := make(chan *toolkit.Response, 1)
			go func() {
				done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "s-" + tt.name, Name: "sync", Durable: true})
			}()
			<-started
			killDurableWorker(w1, nc1)
			heir, _ := durableWorker(t, s, newTK(true), ackWait, "heir-"+tt.name)
			r := <-done
			heir.Stop(ctxT(t)) // the next case's first delivery is its doomed worker's
			if r.Code != tt.want || runs.Load() != tt.runs || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
				t.Fatalf("final %s %q (attempts %v, runs %d); want %s, runs %d", r.Code, r.Text(), r.Metadata[wire.MetaAttempts], runs.Load(), tt.want, tt.runs)
			}
			if tt.want == toolkit.CodeApprovalRequired && !strings.Contains(r.Text(), "the upstream wants an approval") {
				t.Fatalf("the tool's answer was replaced: %q", r.Text())
			}
		})
	}
}
