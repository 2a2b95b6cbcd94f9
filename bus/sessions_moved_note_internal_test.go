package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestMovedNoteSurvivesFlushBeforeFinal: a call that moved its session
// (its worker gone) says so in its content, as a last line. Its tool
// wrote a chunk, held for the timed flush, and returned; the note went
// into the final's content alone, as the call had not streamed yet. The
// timed flush came between then and the final: the chunk went out, the
// final went out without content, and the caller never got the note. The
// note now goes as one more chunk whenever the final goes out after
// chunks, whenever they went.
func TestMovedNoteSurvivesFlushBeforeFinal(t *testing.T) {
	s := natstest.Embedded(t, false)
	worker := func(instance string) *Worker {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return w.Write(toolkit.Text("put on " + instance))
			}), toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		nc := natstest.Connect(t, s)
		// No timed flush comes on its own: the test says when.
		return serve(t, nc, tk, &WorkerOptions{Instance: instance, FlushDelay: time.Hour,
			Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func() *Client {
		cl, err := NewClient(natstest.Connect(t, s), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	call := toolkit.ToolCall{Name: "put", Session: "s"}
	a := worker("a")
	if r := client().Invoke(ctx, call); r.Metadata[wire.MetaSessionWorker] != "a" || r.Text() != "put on a" {
		t.Fatalf("first call: %s %q %v", r.State, r.Text(), r.Metadata)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	b := worker("b")
	b.beforeFinal = func(s *sender) {
		// The timed flush of what the tool wrote comes due now, after
		// the note was added to the final.
		s.mu.Lock()
		gen := s.holdGen
		s.mu.Unlock()
		s.flushDue(gen)
	}
	r := client().Invoke(ctx, call)
	if r.Metadata[wire.MetaSessionWorker] != "b" || r.Metadata[wire.MetaSessionMovedFrom] != "a" {
		t.Fatalf("the call after a stopped: %s %q %v", r.State, r.Text(), r.Metadata)
	}
	if !strings.HasPrefix(r.Text(), "put on b") || !strings.Contains(r.Text(), movedText("a", "b", false, "")) {
		t.Fatalf("the caller got %q, without the note that the session moved", r.Text())
	}
}
