package bus

import (
	"context"
	"encoding/base64"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTombstone: a cancel that overtakes its call leaves a tombstone, and
// the call is answered interrupted without running.
func TestTombstone(t *testing.T) {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	tk := toolkit.New(nil)
	ran := make(chan struct{}, 1)
	if err := tk.Add(toolkit.Func("work", "Works.", func(ctx context.Context, in struct{}) (string, error) {
		ran <- struct{}{}
		return "worked", nil
	})); err != nil {
		t.Fatal(err)
	}
	w := serve(t, wnc, tk, nil)
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}

	// The tombstone keeps the cancel's cause: a deadline that overtook
	// its call answers timeout.
	for _, tc := range []struct {
		id, reason string
		code       toolkit.Code
	}{
		{"early", "", toolkit.CodeInterrupted},
		{"early-deadline", wire.CancelReasonDeadline, toolkit.CodeTimeout},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if err := c.cancel(tc.id, tc.reason, false, ""); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				w.mu.Lock()
				_, ok := w.tombs[tc.id]
				w.mu.Unlock()
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no tombstone for the early cancel")
				}
				time.Sleep(2 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := c.Invoke(ctx, toolkit.ToolCall{ID: tc.id, Name: "work"})
			if r.Code != tc.code || r.Metadata[wire.MetaWorker] == nil {
				t.Fatalf("%+v, want %s from the worker", r, tc.code)
			}
			select {
			case <-ran:
				t.Fatal("the tool ran although its cancel came first")
			default:
			}
			// The tombstone is used up: the id works again.
			if r := c.Invoke(ctx, toolkit.ToolCall{ID: tc.id, Name: "work"}); r.Text() != "worked" {
				t.Fatalf("%+v", r)
			}
			<-ran
		})
	}
}

// TestSplit checks that split halves accumulate to the whole chunk.
func TestSplit(t *testing.T) {
	s := &sender{id: "call"}
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i)
	}
	cases := []struct {
		name  string
		chunk toolkit.Chunk
	}{
		{"ascii text", toolkit.Text(strings.Repeat("abcdefgh", 500))},
		{"multibyte text", toolkit.Text(strings.Repeat("ü✓日本", 700))},
		{"text with id", toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, ID: "t", Text: strings.Repeat("x", 999)}}}},
		{"data without id", toolkit.Data("application/octet-stream", data)},
		{"mixed blocks", toolkit.Chunk{State: toolkit.StateError, Metadata: map[string]any{"k": "v"}, Content: []toolkit.Block{
			{Type: toolkit.BlockText, Text: strings.Repeat("a", 700)},
			{Type: toolkit.BlockData, ID: "d", MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(data)},
			{Type: toolkit.BlockData, URL: "https://example.com/x.png"},
			{Type: toolkit.BlockText, Text: strings.Repeat("b", 300)},
		}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var whole toolkit.Accumulator
			whole.Add(&tc.chunk)
			want := whole.Response("call")

			pieces := []*toolkit.Chunk{&tc.chunk}
			for range 4 { // split every piece four times over
				var next []*toolkit.Chunk
				for _, p := range pieces {
					if a, b, ok := s.split(p); ok {
						if a.Size() >= p.Size() || b.Size() >= p.Size() {
							t.Fatalf("split did not shrink: %d → %d + %d", p.Size(), a.Size(), b.Size())
						}
						next = append(next, a, b)
					} else {
						next = append(next, p)
					}
				}
				pieces = next
			}
			if len(pieces) < 2 {
				t.Fatal("nothing was split")
			}
			var acc toolkit.Accumulator
			for _, p := range pieces {
				acc.Add(p)
			}
			got := acc.Response("call")
			if got.State != want.State || got.Text() != want.Text() || len(got.Content) != len(want.Content) {
				t.Fatalf("split pieces accumulate to %+v, want %+v", got, want)
			}
			for i := range want.Content {
				g, w := got.Content[i], want.Content[i]
				if g.Data != w.Data || g.Text != w.Text || g.URL != w.URL || g.MediaType != w.MediaType {
					t.Fatalf("block %d differs", i)
				}
				if w.ID != "" && g.ID != w.ID {
					t.Fatalf("block %d id %q, want %q", i, g.ID, w.ID)
				}
			}
			if got.Metadata["k"] != want.Metadata["k"] {
				t.Fatalf("metadata %v", got.Metadata)
			}
		})
	}
}

func TestSplitRefusesWhatCannotShrink(t *testing.T) {
	s := &sender{id: "call"}
	for _, c := range []toolkit.Chunk{
		{Content: []toolkit.Block{{Type: toolkit.BlockData, URL: "https://example.com/" + strings.Repeat("x", 100)}}},
		{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}},
		{Metadata: map[string]any{"only": "metadata"}},
	} {
		if _, _, ok := s.split(&c); ok {
			t.Fatalf("split %+v", c)
		}
	}
}

// TestInlinable: a tool's calls run on the receiving reader only after
// quickAfter quick runs in a row, not after a slow run or a penalty, not
// on other paths, not without a free slot, and not while calls pile up in
// the inbox.
func TestInlinable(t *testing.T) {
	w := &Worker{inbox: make(chan *nats.Msg, quickBacklog+1), slots: make(chan struct{}, 1)}
	ts := new(toolState)
	p := &ts.pace
	s := &sender{w: w, tool: ts}
	quickRuns := func(n int) {
		for range n {
			p.record(time.Microsecond)
		}
	}
	try := func(want bool, what string) {
		t.Helper()
		got := w.inlinable(s)
		if got {
			<-w.slots
		}
		if got != want {
			t.Fatalf("%s: inlinable = %v, want %v", what, got, want)
		}
	}
	quickRuns(quickAfter - 1)
	try(false, "one quick run short")
	quickRuns(1)
	try(true, "after quickAfter quick runs")
	p.record(quickLimit + time.Microsecond)
	try(false, "after a slow run")
	quickRuns(quickAfter)
	try(true, "quick again")
	p.penalize()
	quickRuns(quickAfter)
	try(false, "penalized, quickAfter runs later")
	quickRuns(slowPenalty)
	try(true, "after the penalty")
	s.keep = true
	try(false, "a kept result")
	s.keep = false
	w.slots <- struct{}{}
	try(false, "no free slot")
	<-w.slots
	for range quickBacklog + 1 {
		w.inbox <- &nats.Msg{}
	}
	try(false, "calls piling up")
}

// TestQueueCallForeignInProcess: a first attempt answered "duplicate
// message id is in process" met another sender's message, so the
// duplicate acknowledgement after it is not taken for this call's own
// earlier attempt.
func TestQueueCallForeignInProcess(t *testing.T) {
	n := 0
	publish := func(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
		if n++; n == 1 {
			return nil, &jetstream.APIError{Code: 409, ErrorCode: errCodeDuplicateInProcess}
		}
		return &jetstream.PubAck{Stream: "TOOLBUS_CALLS", Sequence: 7, Duplicate: true}, nil
	}
	ack, tries, uncertain, err := queueCall(context.Background(), nil, publish, time.Now().Add(5*time.Second), &nats.Msg{Subject: "x"})
	if err != nil || !ack.Duplicate || tries != 2 || uncertain {
		t.Errorf("after another sender's message in process: ack %+v, tries %d, uncertain %v, err %v; want its duplicate, not taken for an earlier try of ours", ack, tries, uncertain, err)
	}
}

// TestPassedCallsBounded: the calls passed on whose no-responders status
// may still come back are bounded (a caller may send a flood of calls of
// tools nobody serves to a worker's pinned subject): past maxPassed
// waiting at once, a call is not passed on (it is answered where it is).
func TestPassedCallsBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	w := &Worker{nc: natstest.Connect(t, s), log: slog.New(slog.DiscardHandler)}
	in := &incoming{tool: "t", reply: "_INBOX.x"}
	for i := range maxPassed {
		if _, err := w.passed.add(w, in, wire.Msgpack, strconv.Itoa(i), "", false); err != nil {
			t.Fatalf("call %d of %d: %v", i, maxPassed, err)
		}
	}
	if _, err := w.passed.add(w, in, wire.Msgpack, "over", "", false); err == nil {
		t.Fatalf("%d calls waiting and one more taken", maxPassed)
	}
	// Answered ones make room, also behind one still waiting.
	for i := 1; i < maxPassed; i++ {
		w.passed.take(w.passed.prefix + strconv.FormatUint(uint64(i+1), 36))
	}
	if _, err := w.passed.add(w, in, wire.Msgpack, "after", "", false); err != nil {
		t.Fatalf("after the statuses came back: %v", err)
	}
	if n := len(w.passed.order); n > 2 {
		t.Fatalf("%d reply subjects kept for 2 calls waiting", n)
	}
	w.passed.stop()
}
