package bus

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// BenchmarkLead is the worker's own work for one quick call, as its
// leading reader does it: accept the request (decode, check, register),
// run the tool inline through the toolkit, encode and publish the final,
// end the call. No caller waits: the final is published to a subject
// nobody reads, so what is measured is the worker's code and nats.go's
// publish, one call after another on one goroutine.
//
//	go test -run '^$' -bench BenchmarkLead -benchmem ./bus/
func BenchmarkLead(b *testing.B) {
	s := natstest.Embedded(b, false)
	nc := natstest.Connect(b, s)
	tk := toolkit.New(nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	if err := tk.Add(toolkit.Func("echo", "Echo the text back.", func(ctx context.Context, in echoIn) (string, error) { return in.Text, nil })); err != nil {
		b.Fatal(err)
	}
	w, err := Serve(nc, tk, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Stop(context.Background()) })
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "bench-1", Input: map[string]any{"text": strings.Repeat("x", 128)}, More: true})
	if err != nil {
		b.Fatal(err)
	}
	// call is the leader's work for one call; false when the call did
	// not run inline (the tool is not quick yet, or a slot was not free).
	call := func() bool {
		m := &nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: "_INBOX.lead-bench.1", Data: data}
		s := w.onCall(m, 0)
		if s == nil {
			b.Fatal("the call was answered at once")
		}
		if !w.inlinable(s) {
			s.run() // on a goroutine of its own, as a reader would
			return false
		}
		s.runSlotted() // as the leader does, without its clock's hand-off
		return true
	}
	for range 2 * quickAfter { // the tool's quick runs make it run inline
		call()
	}
	b.ReportAllocs()
	inline := 0
	for b.Loop() {
		if call() {
			inline++
		}
	}
	if inline < b.N/2 {
		b.Fatalf("%d of %d calls ran inline", inline, b.N)
	}
}
