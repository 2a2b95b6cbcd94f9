package bus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// rawCaller publishes a call of tool on nc from an inbox of its own and
// returns a wait for n more probes of that inbox (frames with a reply
// subject), failing on a final. The call is cancelled when the test ends.
func rawCaller(t *testing.T, nc *nats.Conn, tool, id string) (probes func(n int)) {
	t.Helper()
	body, err := msgpack.Marshal(&wire.Request{ID: id, Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	call := &nats.Msg{Subject: wire.CallSubject(tool, ""), Reply: inbox, Data: body}
	if err := nc.PublishMsg(call); err != nil {
		t.Fatal(err)
	}
	// Cancelled at the end, before nc closes: the worker's stop need not
	// wait for the call to find its caller gone.
	t.Cleanup(func() {
		nc.PublishMsg(&nats.Msg{Subject: wire.CancelSubject("", id), Header: nats.Header{wire.HeaderVersion: {wire.Version}}})
		nc.Flush()
	})
	started := false
	return func(n int) {
		t.Helper()
		for seen := 0; seen < n; {
			m, err := sub.NextMsg(guard)
			if errors.Is(err, nats.ErrNoResponders) && !started {
				// The worker's subscription has not reached this node
				// yet (a cluster just formed): the call reached no one.
				time.Sleep(50 * time.Millisecond)
				if err := nc.PublishMsg(call); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("after %d probes: %v", seen, err)
			}
			started = true
			f, err := decodeFrame(m)
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind == wire.KindFinal {
				t.Fatalf("final %s %q while the caller is there", f.Final.Code, f.Final.Text())
			}
			if m.Reply != "" {
				seen++
			}
		}
	}
}

// A caller whose node goes down reconnects to another node within a
// second or two; its call, on a worker on a third node, runs on.
func TestCallerGoneCallerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	ended := make(chan error, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, goneTool("forever", 0, ended))
	serve(t, clusterConn(t, cl, 2), tk, &bus.WorkerOptions{CallerGoneAfter: 4 * time.Second})
	nc := clusterConn(t, cl, 0)
	probes := rawCaller(t, nc, "forever", "moves")
	probes(1)
	cl.Stop(0)
	// Well past CallerGoneAfter after the node went down.
	probes(7)
	select {
	case err := <-ended:
		t.Fatalf("the call ended (%v) though its caller reconnected", err)
	default:
	}
}

// The worker's node goes down: the worker reconnects to another node, the
// caller's, and its call runs on.
func TestCallerGoneWorkerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	ended := make(chan error, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, goneTool("forever", 0, ended))
	serve(t, clusterConn(t, cl, 2), tk, &bus.WorkerOptions{CallerGoneAfter: 4 * time.Second})
	probes := rawCaller(t, clusterConn(t, cl, 0), "forever", "stays")
	probes(1)
	cl.Stop(2)
	probes(7)
	select {
	case err := <-ended:
		t.Fatalf("the call ended (%v) though its caller is there", err)
	default:
	}
}
