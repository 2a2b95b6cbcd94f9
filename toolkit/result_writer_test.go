package toolkit_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// resultWriter records what it is written, and how.
type resultWriter struct{ got []string }

func (u *resultWriter) Write(c toolkit.Chunk) error {
	u.got = append(u.got, "chunk "+c.Content[0].Text)
	return nil
}
func (u *resultWriter) WriteResult(c toolkit.Chunk) error {
	u.got = append(u.got, "result "+c.Content[0].Text)
	return nil
}
func (u *resultWriter) Progress(toolkit.Progress) error { return nil }

// TestResultWriter: a function tool's result goes to a ResultWriter as the
// result, in order with what a middleware writes after it; any other
// Writer gets it as a chunk.
func TestResultWriter(t *testing.T) {
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("echo", "Echoes.", func(ctx context.Context, in struct{ Text string }) (string, error) { return in.Text, nil }))
	call := toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"Text": "hi"}}

	out := &resultWriter{}
	r := tk.Dispatch(context.Background(), call, out)
	if !slices.Equal(out.got, []string{"result hi"}) || r.Text() != "hi" || r.State != toolkit.StateSuccess {
		t.Fatalf("written %q, final %s %q", out.got, r.State, r.Text())
	}

	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
			if err := next(ctx, c, w); err != nil {
				return err
			}
			return w.Write(toolkit.Text(" (checked)"))
		}
	})
	out = &resultWriter{}
	r = tk.Dispatch(context.Background(), call, out)
	if !slices.Equal(out.got, []string{"result hi", "chunk  (checked)"}) || r.Text() != "hi (checked)" {
		t.Fatalf("written %q, final %q", out.got, r.Text())
	}

	var got []string
	r = tk.Dispatch(context.Background(), call, toolkit.WriterFuncs{Chunk: func(c toolkit.Chunk) error {
		got = append(got, c.Content[0].Text)
		return nil
	}})
	if !slices.Equal(got, []string{"hi", " (checked)"}) || r.Text() != "hi (checked)" {
		t.Fatalf("written %q, final %q", got, r.Text())
	}
}
