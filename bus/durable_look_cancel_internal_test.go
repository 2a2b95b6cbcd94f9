package bus

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableLookAskerCancelledEndsAtOnce: the silent durable calls of a
// tool share one look at its consumer, asked by one of them for all. The
// call that asked waited for the look's answer whatever its caller did,
// so a caller cancelling it while JetStream was slow to answer had its
// call end up to lookupWait late (before the looks were shared, the
// cancel ended the lookup at once). The test holds the look's answer
// back until the cancelled call has ended: it ends with its cancel, and
// the calls sharing the look still get the look's answer.
func TestDurableLookAskerCancelledEndsAtOnce(t *testing.T) {
	s := natstest.Embedded(t, false)
	w := serveEcho(t, s, WorkerOptions{Instance: "w1", Durable: &DurableOptions{JetStream: natstest.JS(t, natstest.Connect(t, s))}})
	if err := w.Stop(natstest.Ctx(t)); err != nil { // the consumer stays
		t.Fatal(err)
	}

	// The client's JetStream requests go through a relay to the server's
	// JetStream API, which holds the answer to the first request for
	// echo's consumer until released, and never answers a later one: the
	// calls can have but that look's answer.
	const prefix = "held.API."
	info := prefix + "CONSUMER.INFO." + wire.StreamCalls + ".echo"
	relay := natstest.Connect(t, s)
	var (
		looks   atomic.Int32
		asked   = make(chan struct{})
		release = make(chan struct{})
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	forward := func(m *nats.Msg) {
		defer wg.Done()
		if m.Subject == info {
			switch looks.Add(1) {
			case 1:
				close(asked)
				select {
				case <-release:
				case <-stop:
					return
				}
			default:
				return
			}
		}
		r, err := relay.RequestMsg(&nats.Msg{Subject: "$JS.API." + strings.TrimPrefix(m.Subject, prefix), Header: m.Header, Data: m.Data}, natstest.Guard)
		if err == nil {
			m.RespondMsg(&nats.Msg{Header: r.Header, Data: r.Data})
		}
	}
	sub, err := relay.Subscribe(prefix+">", func(m *nats.Msg) {
		wg.Add(1)
		go forward(m)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe(); close(stop); wg.Wait() })

	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{StallTimeout: 200 * time.Millisecond, CancelGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// The look is held back for as long as the cancelled call takes to
	// end, which on a loaded machine may pass lookupWait: the look waits
	// longer here, so the calls sharing it can only miss its answer by
	// the cancelled call waiting for it.
	c.lookWait = natstest.Guard
	if _, err := c.jetStream(); err != nil {
		t.Fatal(err)
	}
	held, err := jetstream.NewWithAPIPrefix(c.nc, prefix)
	if err != nil {
		t.Fatal(err)
	}
	c.fleetMu.Lock()
	c.js = held
	c.fleetMu.Unlock()
	c.consumers.add("echo") // seen: the calls' first request for the consumer is a look

	// The call to cancel, silent in the queue, asks the look.
	since := time.Now()
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	defer cancel()
	ended := make(chan *toolkit.Response, 1)
	go func() {
		ended <- c.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "echo", Durable: true, Input: map[string]any{"text": "hi"}})
	}()
	select {
	case <-asked:
	case <-time.After(natstest.Guard):
		t.Fatalf("no look at echo's consumer after %v", natstest.Guard)
	}
	// Other calls, their messages stored before it was asked, share it.
	type answer struct {
		info *jetstream.ConsumerInfo
		at   time.Time
	}
	shared := make(chan answer, 2)
	for range 2 {
		go func() {
			info, at := c.looks.look(natstest.Ctx(t), c, "echo", since)
			shared <- answer{info, at}
		}()
	}

	cancel()
	var r *toolkit.Response
	select {
	case r = <-ended:
	case <-time.After(natstest.Guard):
		t.Fatalf("the call cancelled during its look had not ended after %v", natstest.Guard)
	}
	if r.State != toolkit.StateInterrupted || r.Code != toolkit.CodeInterrupted {
		t.Fatalf("the call cancelled during its look: %s %s %q; want interrupted", r.State, r.Code, r.Text())
	}
	// Ended: the look's answer comes now, within the look's wait of its
	// ask unless the call waited for it to be given up.
	close(release)
	for range 2 {
		select {
		case a := <-shared:
			if a.info == nil || a.info.Name != "echo" {
				t.Fatalf("a call sharing the look had no answer (%v): the look was given up before its answer came, the cancelled call having waited for it", a.info)
			}
		case <-time.After(natstest.Guard):
			t.Fatalf("a call sharing the look had no answer after %v", natstest.Guard)
		}
	}
}
