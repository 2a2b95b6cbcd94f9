package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionPinKeptWhileCallRunsThroughLeaderStepdowns: calls of
// sessions run on w1 for several of the sessions bucket's TTLs while its
// stream leader steps down again and again; their pins name w1 all along,
// and the sessions' other calls, sent to w2 meanwhile, go to w1. A
// renewal whose answer the stepdown dropped was waited for 5 s, past a
// 2 s TTL, so the pin expired under its running call, and the session's
// next call reaching w2 would have claimed it there.
func TestSessionPinKeptWhileCallRunsThroughLeaderStepdowns(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	// Short enough for the test to span several, long enough that a
	// loaded machine's slow answers do not let a pin renewed every
	// quarter of it expire.
	const pinTTL = 5 * time.Second
	c := natstest.NewCluster(t)
	nodes := c.Nodes()
	conn := func(i int) *nats.Conn { return natstest.URLConn(t, nodes[i].ClientURL()) }
	started, release := make(chan struct{}), make(chan struct{})
	holdWorker := func(nc *nats.Conn, instance string) {
		tk := storeToolkit(t)
		schema := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}
		mustAdd(t, tk, toolkit.Raw("hold", "Run until released.", schema, func(ctx context.Context, _ *toolkit.Call, w toolkit.Writer) error {
			started <- struct{}{}
			select {
			case <-release:
				return w.Write(toolkit.Text("released"))
			case <-ctx.Done():
				return ctx.Err()
			}
		}), toolkit.SessionBound())
		serve(t, nc, tk, &bus.WorkerOptions{Instance: instance,
			Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc), TTL: pinTTL, Replicas: 3}})
	}
	holdWorker(conn(0), "w1")
	holdWorker(conn(1), "w2")
	in := newRVInbox(t, conn(2), []string{nodes[0].ClientURL(), nodes[1].ClientURL(), nodes[2].ClientURL()})

	const sessions = 32
	held := make(chan []rvFrame, sessions)
	for i := range sessions {
		go func() {
			held <- in.call(t, wire.PinnedSubject("w1", "hold", ""), nil, fmt.Sprint("s", i), "", time.Minute)
		}()
	}
	for range sessions {
		select {
		case <-started:
		case frames := <-held:
			t.Fatalf("hold ended at once: %+v", frames)
		}
	}
	stop := natstest.Stepdowns(t, conn(2), "KV_toolbus_sessions")
	// Each pin as the stream leader holds it (a read that fails, the
	// leader stepping down, is made again), and a call of the session
	// sent to w2 now and then.
	js := natstest.JS(t, conn(2))
	for end, n := time.Now().Add(3*pinTTL), 0; time.Now().Before(end) && !t.Failed(); n++ {
		for i := range sessions {
			key := fmt.Sprint("s", i)
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			e, err := kv.LeaderGet(rctx, js, wire.BucketSessions, key)
			cancel()
			if err == nil && (!e.Found || string(e.Value) != "w1") {
				t.Errorf("while w1 runs a call of session %s, its pin = %q (found %v)", key, e.Value, e.Found)
			}
		}
		if n%10 == 0 {
			i := n / 10 % sessions
			f := rvFinal(t, in.call(t, wire.PinnedSubject("w2", "put", ""), nil, fmt.Sprint("s", i), "v", guard))
			if f.meta(wire.MetaSessionWorker) != "w1" {
				t.Errorf("while w1 runs a call of session s%d, its call sent to w2 ran pinned to %q: %+v", i, f.meta(wire.MetaSessionWorker), f.Final)
			}
		}
	}
	t.Logf("%d leader stepdowns", stop())
	close(release)
	for range sessions {
		if f := rvFinal(t, <-held); f.text() != "released" {
			t.Errorf("hold: %+v", f.Final)
		}
	}
}
