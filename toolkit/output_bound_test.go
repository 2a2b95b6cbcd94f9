package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type noIn struct{}

// A tool that streams without end grew its call's accumulated output
// without bound (the caller's process, and a worker's, ran out of
// memory): past Options.MaxResultBytes the call fails with a clear
// message, the tool's next write is refused, and nothing beyond the
// bound is kept or streamed.
func TestOutputBound(t *testing.T) {
	const limit = 10_000
	chunk := strings.Repeat("x", 100)
	var writeErr error
	var writes int
	flood := toolkit.Stream("flood", "Write without end.", func(ctx context.Context, _ noIn, w toolkit.Writer) error {
		for writes = 0; writes < 1_000_000; writes++ {
			if err := w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: chunk}}}); err != nil {
				writeErr = err
				return err
			}
		}
		return nil
	})
	tk := toolkit.New(&toolkit.Options{MaxResultBytes: limit})
	if err := tk.Add(flood); err != nil {
		t.Fatal(err)
	}

	streamed := 0
	var final *toolkit.Response
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "c1", Name: "flood"}) {
		if ev.Chunk != nil {
			for _, b := range ev.Chunk.Content {
				streamed += len(b.Text)
			}
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if !errors.Is(writeErr, toolkit.ErrOutputTooLarge) {
		t.Errorf("the tool's write past the bound returned %v after %d writes, want ErrOutputTooLarge", writeErr, writes)
	}
	if final == nil {
		t.Fatal("no final")
	}
	if final.State != toolkit.StateError || final.Code != toolkit.CodeToolError {
		t.Errorf("final %s/%s, want error/tool_error", final.State, final.Code)
	}
	text := final.Content[len(final.Content)-1].Text
	if !strings.Contains(text, "ToolOutputTooLargeError") || !strings.Contains(text, "10000 bytes") {
		t.Errorf("final does not say the output was too large: %q", text)
	}
	kept := 0
	for _, b := range final.Content {
		kept += len(b.Text)
	}
	if kept > limit+len(text) || streamed > limit+len(text) {
		t.Errorf("kept %d and streamed %d bytes of output; the bound is %d", kept, streamed, limit)
	}

	// A tool that ignores the refusal keeps writing into nothing.
	stubborn := toolkit.Stream("stubborn", "Write on whatever happens.", func(ctx context.Context, _ noIn, w toolkit.Writer) error {
		for range 100_000 {
			_ = w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: chunk}}})
		}
		return errors.New("never seen")
	})
	if err := tk.Add(stubborn); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c2", Name: "stubborn"})
	size := 0
	for _, b := range r.Content {
		size += len(b.Text)
	}
	if r.Code != toolkit.CodeToolError || size > 2*limit || strings.Contains(r.Content[len(r.Content)-1].Text, "never seen") {
		t.Errorf("stubborn tool: code %s, %d bytes, last %q", r.Code, size, r.Content[len(r.Content)-1].Text)
	}

	// Negative: no bound.
	free := toolkit.New(&toolkit.Options{MaxResultBytes: -1})
	if err := free.Add(stubborn); err != nil {
		t.Fatal(err)
	}
	if r := free.Invoke(context.Background(), toolkit.ToolCall{ID: "c3", Name: "stubborn"}); r.Code != toolkit.CodeToolError || !strings.Contains(r.Content[len(r.Content)-1].Text, "never seen") {
		t.Errorf("without a bound the tool's own error ends the call, got %s %q", r.Code, r.Content[len(r.Content)-1].Text)
	}
	if toolkit.DefaultMaxResultBytes != 64<<20 {
		t.Errorf("DefaultMaxResultBytes %d", toolkit.DefaultMaxResultBytes)
	}
}
