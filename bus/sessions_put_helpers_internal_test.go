package bus

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/embedded"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// putTool is a tool put answering "put on <instance>", counting its runs
// in n (when not nil): where a session's call ran.
func putTool(instance string, n *atomic.Int64) *toolkit.Tool {
	return toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if n != nil {
			n.Add(1)
		}
		return w.Write(toolkit.Text("put on " + instance))
	})
}

// putWorker starts worker instance on s, with session affinity, serving
// put (putTool) session-bound.
func putWorker(t *testing.T, s *embedded.Server, instance string, n *atomic.Int64) *Worker {
	t.Helper()
	tk := toolkit.New(nil)
	if err := tk.Add(putTool(instance, n), toolkit.SessionBound()); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, s)
	return serve(t, nc, tk, &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
}
