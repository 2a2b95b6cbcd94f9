package bus

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// callsDropped matches a warning of dropped calls: how many since the
// last, and the total.
var callsDropped = regexp.MustCompile(`subscription=calls dropped=(\d+) total=(\d+)`)

// TestDroppedCallsCounted: calls NATS dropped because the worker's inbox
// was full (its leader stuck) were dropped silently: no count, no line,
// and their callers learnt of it only as worker_lost once their stall
// timeout passed. The worker now counts them (Counters().Dropped) and
// warns, naming the subscription.
func TestDroppedCallsCounted(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	var logs natstest.Buffer
	const inboxLen = 4
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "w", inboxLen: inboxLen,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	held, release := make(chan struct{}), make(chan struct{})
	var hold sync.Once
	// The leader stops reading the inbox after taking the first call.
	w.afterAccept = func(*sender) { hold.Do(func() { close(held); <-release }) }
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	first := make(chan *toolkit.Response, 1)
	go func() {
		first <- c.Invoke(natstest.Ctx(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "held"}})
	}()
	<-held

	pub := natstest.Connect(t, s)
	const flood = 20
	send := func(n int) {
		for range n {
			if err := pub.Publish(wire.CallSubject("echo", ""), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// The clock reads the counts once a second, whenever that falls: here
	// between the flood's drops, which its warnings then tell in two.
	send(flood / 2)
	natstest.WaitFor(t, "the first drops", func() bool { return w.Counters().Dropped[DroppedCalls] == flood/2-inboxLen })
	w.checkDrops()
	send(flood / 2)
	// inboxLen of them wait in the inbox, NATS dropped the others.
	const dropped = flood - inboxLen
	// Every drop is told once, in as many warnings as readings found
	// some, each with the total so far.
	natstest.WaitFor(t, "warnings of every dropped call", func() bool {
		told, total := 0, 0
		for _, m := range callsDropped.FindAllStringSubmatch(logs.String(), -1) {
			n, _ := strconv.Atoi(m[1])
			told += n
			total, _ = strconv.Atoi(m[2])
		}
		return told == dropped && total == dropped
	})
	if n := w.Counters().Dropped[DroppedCalls]; n != dropped {
		t.Errorf("Counters().Dropped[calls] = %d, want %d", n, dropped)
	}
	for _, k := range dropKinds {
		if _, ok := w.Counters().Dropped[k]; !ok {
			t.Errorf("Counters().Dropped lacks %q", k)
		}
	}
	releaseOnce.Do(func() { close(release) })
	if r := <-first; r.Text() != "held" {
		t.Errorf("the held call: %s %s %q", r.State, r.Code, r.Text())
	}
}
