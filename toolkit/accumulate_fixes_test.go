package toolkit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// mutating is a consumer that rewrites the chunks it is handed in place
// (a transport that redacts or truncates text for display).
type mutating struct{}

func (mutating) Write(c toolkit.Chunk) error {
	for i := range c.Content {
		c.Content[i].Text = "[shown]"
	}
	return nil
}
func (mutating) Progress(toolkit.Progress) error { return nil }

// TestFailChunkAccumulatedBeforeForwarded: a failure's error chunk is
// accumulated before it is forwarded, as every chunk is, so a consumer
// that changes its chunk cannot change the final's text.
func TestFailChunkAccumulatedBeforeForwarded(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Raw("t", "d", nil, func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text("partial ")); err != nil {
			return err
		}
		return errors.New("boom")
	})); err != nil {
		t.Fatal(err)
	}
	r := tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "1", Name: "t"}, mutating{})
	if got, want := r.Text(), "partial boom"; got != want {
		t.Errorf("tool error final = %q, want %q", got, want)
	}
	r = tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "2", Name: "nope"}, mutating{})
	if got, want := r.Text(), "ToolNotFoundError: The tool named 'nope' doesn't exist."; got != want {
		t.Errorf("not-found final = %q, want %q", got, want)
	}
}

// TestFuncStateOnlyChunk: a Func that returns a Chunk carrying only a
// state (no content, no metadata) ends in that state, as AgentScope's
// append_chunk applies a chunk's ERROR/DENIED/INTERRUPTED state whatever
// its content.
func TestFuncStateOnlyChunk(t *testing.T) {
	type in struct{}
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("deny", "d", func(ctx context.Context, _ in) (toolkit.Chunk, error) {
		return toolkit.Chunk{State: toolkit.StateDenied}, nil
	})); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "deny"})
	if r.State != toolkit.StateDenied || r.Code != toolkit.CodeDenied {
		t.Errorf("final = %s/%q, want denied/denied", r.State, r.Code)
	}
}

// TestRenamedBlockIDIsFree: the ID made for a same-ID block of another
// type is not one already in the response.
func TestRenamedBlockIDIsFree(t *testing.T) {
	var a toolkit.Accumulator
	a.Add(&toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, ID: "a", Text: "t"}}})
	a.Add(&toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "a-1", Data: "AAAA"}}})
	a.Add(&toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "a", Data: "BBBB"}}})
	r := a.Response("x")
	seen := map[string]bool{}
	for _, b := range r.Content {
		if seen[b.ID] {
			t.Errorf("duplicate block id %q in %+v", b.ID, r.Content)
		}
		seen[b.ID] = true
	}
}
