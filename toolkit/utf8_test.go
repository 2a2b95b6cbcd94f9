package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type pathIn struct {
	Path string `json:"file_path"`
}

type pathRangesIn struct {
	Path   string `json:"file_path"`
	Ranges []int  `json:"ranges,omitempty"`
}

// A string that is not valid UTF-8 (msgpack strings are bytes) reaches a
// typed tool as encoding/json decodes it, each invalid byte replaced by
// U+FFFD, whether the input struct is flat (decoded without a JSON round
// trip) or not; a Raw tool gets the bytes as given. Before, the flat
// struct kept the bytes, so insert_text_file and write_text_file named
// different files for the same file_path.
func TestInvalidUTF8DecodedAlikeByEveryTypedTool(t *testing.T) {
	tk := newToolkit(t, nil)
	got := map[string]string{}
	mustAdd(t, tk, toolkit.Func("flat", "Flat.", func(_ context.Context, in pathIn) (string, error) {
		got["flat"] = in.Path
		return "ok", nil
	}))
	mustAdd(t, tk, toolkit.Func("ranged", "Ranged.", func(_ context.Context, in pathRangesIn) (string, error) {
		got["ranged"] = in.Path
		return "ok", nil
	}))
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", objectSchema(map[string]any{"file_path": map[string]any{"type": "string"}}, "file_path"),
		func(_ context.Context, call *toolkit.Call, w toolkit.Writer) error {
			got["raw"], _ = call.Input["file_path"].(string)
			return w.Write(toolkit.Text("ok"))
		}))

	for _, tc := range []struct{ in, typed string }{
		{"caf\xe9.txt", "caf\uFFFD.txt"},
		{"\xff\xfe", "\uFFFD\uFFFD"}, // one U+FFFD per invalid byte, as encoding/json writes them
		{"caf\xc3", "caf\uFFFD"},     // a cut-off rune
		{"café.txt", "café.txt"},     // valid UTF-8 is kept as is
	} {
		clear(got)
		for _, name := range []string{"flat", "ranged", "raw"} {
			r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "c1", Name: name, Input: map[string]any{"file_path": tc.in}})
			if r.final.State != toolkit.StateSuccess {
				t.Fatalf("%s(%q): %+v", name, tc.in, r.final)
			}
		}
		if got["flat"] != tc.typed || got["ranged"] != tc.typed {
			t.Errorf("file_path %q: the flat struct got %q, the one with ranges %q; want both %q", tc.in, got["flat"], got["ranged"], tc.typed)
		}
		if got["raw"] != tc.in {
			t.Errorf("file_path %q: the raw tool got %q, want the bytes as given", tc.in, got["raw"])
		}
	}
}
