package toolkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// An *Error's Metadata was merged into the final whole, uncounted by
// Options.MaxResultBytes: a tool returning an error with 10 MiB of
// metadata under a bound of 1 MiB answered 10 MiB. Its entries now count
// as a chunk's metadata does: those that fit what the bound leaves (in
// key order) are kept, the rest dropped, and the message says so.
func TestErrorMetadataBounded(t *testing.T) {
	const limit = 1 << 20
	tk := newToolkit(t, &toolkit.Options{MaxResultBytes: limit})
	mustAdd(t, tk, toolkit.Raw("dump", "D.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text(strings.Repeat("x", limit/4))); err != nil {
			return err
		}
		return &toolkit.Error{Code: toolkit.CodeToolError, Message: "dump failed", Metadata: map[string]any{
			"a_exit": 3, "b_blob": strings.Repeat("m", 10<<20), "c_host": "db1",
		}}
	}))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "dump"})
	if r.State != toolkit.StateError || r.Code != toolkit.CodeToolError {
		t.Errorf("final %s/%s, want error/tool_error", r.State, r.Code)
	}
	held := len(r.Text())
	for k, v := range r.Metadata {
		s, _ := v.(string)
		held += len(k) + len(s)
	}
	if held > 2*limit {
		t.Fatalf("the final holds %d bytes under a bound of %d", held, limit)
	}
	if r.Metadata["a_exit"] != 3 || r.Metadata["c_host"] != "db1" {
		t.Errorf("metadata %v, want the entries within the bound kept", keys(r.Metadata))
	}
	if text := strings.TrimLeft(r.Text(), "x"); !strings.HasPrefix(text, "dump failed") || !strings.Contains(text, `"b_blob"`) {
		t.Errorf("message %.200q, want the tool's, naming the metadata dropped", text)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
