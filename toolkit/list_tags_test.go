package toolkit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type listTagsIn struct {
	Tags   []string `json:"tags" enum:"a,b" jsonschema:"Tags."`
	Scores []int    `json:"scores,omitempty" minimum:"1" maximum:"10"`
	Mode   *string  `json:"mode,omitempty" enum:"fast,slow"`
}

// TestEnumAndBoundsOnListsAndPointers: the enum, minimum and maximum tags
// of a list field constrain its elements, as pydantic writes
// list[Literal["a", "b"]] and list[Annotated[int, Field(ge=1, le=10)]]
// (on "items"), and the enum of a pointer field, which takes null, takes
// null too, as Optional[Literal["fast", "slow"]] = None does. The enum
// tag of such fields was refused at Add ("a" is not a JSON value), and a
// list's bounds were written on the list, where no validator reads them.
func TestEnumAndBoundsOnListsAndPointers(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("tags", "T.", func(ctx context.Context, in listTagsIn) (string, error) {
		mode := "<nil>"
		if in.Mode != nil {
			mode = *in.Mode
		}
		return fmt.Sprintf("%v %v %s", in.Tags, in.Scores, mode), nil
	}))
	s, _ := tk.Schema("tags")
	jsonEqual(t, "parameters", s.Function.Parameters, map[string]any{
		"type": "object",
		"properties": map[string]any{
			"tags":   map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "string", "enum": []any{"a", "b"}}, "description": "Tags."},
			"scores": map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "integer", "minimum": 1, "maximum": 10}},
			"mode":   map[string]any{"type": []any{"null", "string"}, "enum": []any{"fast", "slow", nil}},
		},
		"required":             []any{"tags"},
		"additionalProperties": false,
	})
	for _, tt := range []struct {
		input map[string]any
		want  string // "" for invalid_input
	}{
		{map[string]any{"tags": []any{"a", "b"}, "scores": []any{1.0, 10.0}, "mode": "slow"}, "[a b] [1 10] slow"},
		{map[string]any{"tags": []any{}, "mode": nil}, "[] [] <nil>"},
		{map[string]any{"tags": []any{"c"}}, ""},
		{map[string]any{"tags": []any{"a"}, "scores": []any{0.0}}, ""},
		{map[string]any{"tags": []any{"a"}, "scores": []any{11.0}}, ""},
		{map[string]any{"tags": []any{"a"}, "mode": "medium"}, ""},
	} {
		r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "tags", Input: tt.input})
		switch {
		case tt.want == "" && r.final.Code != toolkit.CodeInvalidInput:
			t.Errorf("%v: %s/%s %q, want invalid_input", tt.input, r.final.State, r.final.Code, r.final.Text())
		case tt.want != "" && (r.final.State != toolkit.StateSuccess || r.final.Text() != tt.want):
			t.Errorf("%v: %s %q, want %q", tt.input, r.final.State, r.final.Text(), tt.want)
		}
	}
}
