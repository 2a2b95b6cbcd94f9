package bus

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestQueueAcrossReconnect: a durable call whose publish is lost with the
// connection is published again as soon as the connection is back, not
// after the attempt's own wait (queueTry): with a queue wait shorter than
// that, a blip of the link does not fail the call.
func TestQueueAcrossReconnect(t *testing.T) {
	s := natstest.Embedded(t, true)
	if _, err := natstest.JS(t, natstest.Connect(t, s)).CreateStream(natstest.Ctx(t), CallsStreamConfig(2*time.Minute, 1)); err != nil {
		t.Fatal(err)
	}
	px := natstest.ProxyTo(t, s)
	nc := px.Conn(t, nats.ReconnectWait(20*time.Millisecond))
	c, err := NewClient(nc, &ClientOptions{QueueWait: queueTry / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	px.Pause() // the publish goes no further than the proxy
	done := make(chan *toolkit.Response, 1)
	go func() {
		done <- c.enqueue(natstest.Ctx(t), toolkit.ToolCall{ID: "c1", Name: "echo", Durable: true}, c.prefix+"x", nil, []byte{0x80}, new(uint64), new(uint64))
	}()
	for {
		c.mu.Lock()
		n := len(c.acks)
		c.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	px.Cut() // the link breaks: the publish is lost
	px.Resume()
	px.Restore()
	if final := <-done; final != nil {
		t.Fatalf("a durable call queueing across a break of the link: %+v", final)
	}
}
