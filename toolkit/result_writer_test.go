package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// unstreamed records what it is written and says whether it streamed.
type unstreamed struct {
	chunks []string
}

func (u *unstreamed) Write(c toolkit.Chunk) error {
	u.chunks = append(u.chunks, c.Content[0].Text)
	return nil
}
func (u *unstreamed) Progress(toolkit.Progress) error { return nil }
func (u *unstreamed) Unstreamed() bool                { return len(u.chunks) == 0 }

// TestResultToUnstreamed: a function tool's result is not written to a
// Writer whose final carries the content (it is in the final); a chunk a
// middleware writes after it sends the result first, in order.
func TestResultToUnstreamed(t *testing.T) {
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("echo", "Echoes.", func(ctx context.Context, in struct{ Text string }) (string, error) { return in.Text, nil }))
	call := toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"Text": "hi"}}

	out := &unstreamed{}
	r := tk.Dispatch(context.Background(), call, out)
	if len(out.chunks) != 0 || r.Text() != "hi" || r.State != toolkit.StateSuccess {
		t.Fatalf("written %q, final %s %q; want nothing written and the result in the final", out.chunks, r.State, r.Text())
	}

	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, c *toolkit.Call, w toolkit.Writer) error {
			if err := next(ctx, c, w); err != nil {
				return err
			}
			return w.Write(toolkit.Text(" (checked)"))
		}
	})
	out = &unstreamed{}
	r = tk.Dispatch(context.Background(), call, out)
	if len(out.chunks) != 2 || out.chunks[0] != "hi" || out.chunks[1] != " (checked)" || r.Text() != "hi (checked)" {
		t.Fatalf("written %q, final %q; want the result, then the middleware's chunk", out.chunks, r.Text())
	}

	// Any other Writer gets the result as a chunk, as before.
	var got []string
	r = tk.Dispatch(context.Background(), call, toolkit.WriterFuncs{Chunk: func(c toolkit.Chunk) error {
		got = append(got, c.Content[0].Text)
		return nil
	}})
	if len(got) != 2 || got[0] != "hi" || r.Text() != "hi (checked)" {
		t.Fatalf("written %q, final %q", got, r.Text())
	}
}
