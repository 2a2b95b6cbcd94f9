package toolkit

import (
	"context"
	"strings"
	"testing"
)

// TestErrorMetadataNoteWithinBound: when an error's metadata entries were
// dropped to fit Options.MaxResultBytes, the note saying so was appended
// to the message after the entries kept had filled what the bound left,
// so the final passed the bound by the note (and a long note, naming
// keys of escaped bytes, by hundreds of bytes). The note is counted
// before what fits is decided: the final holds no more than the bound.
func TestErrorMetadataNoteWithinBound(t *testing.T) {
	const limit = 64 << 10
	out := strings.Repeat("x", limit/4)
	const msg = "dump failed"
	// What the bound leaves the metadata once the output and the message
	// are counted, as a chunk's output is counted (Accumulator.HeldWith).
	room := limit - (&Chunk{Content: []Block{{Type: BlockText, Text: out}}}).Size() - keptPerBlock -
		(&Block{Type: BlockText, Text: msg}).Size()
	fill := func(k string) string { return strings.Repeat("m", room-metaEntrySize(k, "")) }
	odd := func(c string) string { return strings.Repeat("\x01", 70) + c }
	for _, c := range []struct {
		name    string
		meta    map[string]any
		dropped string
	}{
		{"an entry filling the room", map[string]any{"a_fill": fill("a_fill"), "b_big": strings.Repeat("m", 1<<20)}, `"b_big"`},
		{"long names dropped", map[string]any{"a_fill": fill("a_fill"), odd("b"): strings.Repeat("m", 1<<20), odd("c"): strings.Repeat("m", 1<<20), odd("d"): strings.Repeat("m", 1<<20), odd("e"): strings.Repeat("m", 1<<20)}, " more dropped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := New(&Options{MaxResultBytes: limit})
			if err := tk.Add(Raw("dump", "D.", nil, func(ctx context.Context, call *Call, w Writer) error {
				if err := w.Write(Text(out)); err != nil {
					return err
				}
				return &Error{Code: CodeToolError, Message: msg, Metadata: c.meta}
			})); err != nil {
				t.Fatal(err)
			}
			r := tk.Invoke(context.Background(), ToolCall{ID: "1", Name: "dump"})
			if r.State != StateError || r.Code != CodeToolError {
				t.Fatalf("final %s/%s, want error/tool_error", r.State, r.Code)
			}
			text, ok := strings.CutPrefix(r.Text(), out)
			if !ok || !strings.HasPrefix(text, msg) || !strings.Contains(text, c.dropped) || !strings.Contains(text, "dropped") {
				t.Fatalf("message %.300q, want the tool's, naming the metadata dropped", text)
			}
			held := (&Chunk{Content: []Block{{Type: BlockText, Text: out}}}).Size() + keptPerBlock +
				(&Block{Type: BlockText, Text: text}).Size() + (&Chunk{Metadata: r.Metadata}).MetaSize()
			if held > limit {
				t.Errorf("the final holds %d bytes (the note %d) under a bound of %d", held, len(text)-len(msg), limit)
			}
		})
	}
}

// TestErrorMessageCutWithinBound: an error's message cut to fit
// Options.MaxResultBytes was cut to what the bound left and then given
// the note saying how much was cut, so the final passed the bound by the
// note, and by the note of metadata dropped after it. The notes are
// counted before the message is cut: the final holds no more than the
// bound.
func TestErrorMessageCutWithinBound(t *testing.T) {
	const limit = 64 << 10
	out := strings.Repeat("x", limit/4)
	long := "failed: " + strings.Repeat("é", limit)
	for _, c := range []struct {
		name string
		meta map[string]any
	}{
		{"no metadata", nil},
		{"metadata dropped", map[string]any{"exit": 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := New(&Options{MaxResultBytes: limit})
			if err := tk.Add(Raw("loud", "L.", nil, func(ctx context.Context, call *Call, w Writer) error {
				if err := w.Write(Text(out)); err != nil {
					return err
				}
				return &Error{Code: CodeToolError, Message: long, Metadata: c.meta}
			})); err != nil {
				t.Fatal(err)
			}
			r := tk.Invoke(context.Background(), ToolCall{ID: "1", Name: "loud"})
			text, ok := strings.CutPrefix(r.Text(), out)
			if !ok || !strings.HasPrefix(text, "failed: éé") || !strings.Contains(text, "more bytes of the message cut)") {
				t.Fatalf("message %.100q…, want the tool's, cut", text)
			}
			if c.meta != nil && !strings.Contains(text, `"exit" dropped`) {
				t.Errorf("message …%q, want the metadata dropped named", text[max(len(text)-200, 0):])
			}
			held := (&Chunk{Content: []Block{{Type: BlockText, Text: out}}}).Size() + keptPerBlock +
				(&Block{Type: BlockText, Text: text}).Size() + (&Chunk{Metadata: r.Metadata}).MetaSize()
			if held > limit {
				t.Errorf("the final holds %d bytes under a bound of %d", held, limit)
			}
		})
	}
}
