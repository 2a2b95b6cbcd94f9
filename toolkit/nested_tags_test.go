package toolkit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type stepIn struct {
	Mode  string `json:"mode" enum:"fast,slow"`
	Level int    `json:"level,omitempty" minimum:"1" maximum:"10" default:"5"`
}

type planIn struct {
	First stepIn   `json:"first"`
	Later *stepIn  `json:"later,omitempty"`
	Steps []stepIn `json:"steps,omitempty"`
}

// The default, enum, minimum and maximum tags of a nested struct's fields
// (a struct field, a pointer to one, a slice of them) reach the schema the
// model sees, are validated, and the defaults reach the tool, as they do for
// top-level fields; they were silently dropped.
func TestNestedStructTags(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("plan", "Plan.", func(ctx context.Context, in planIn) (string, error) {
		s := fmt.Sprintf("%s/%d", in.First.Mode, in.First.Level)
		if in.Later != nil {
			s += fmt.Sprintf(" %s/%d", in.Later.Mode, in.Later.Level)
		}
		for _, st := range in.Steps {
			s += fmt.Sprintf(" %s/%d", st.Mode, st.Level)
		}
		return s, nil
	}))
	step := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"mode":  map[string]any{"type": "string", "enum": []any{"fast", "slow"}},
			"level": map[string]any{"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
		},
		"required":             []any{"mode"},
		"additionalProperties": false,
	}
	later := map[string]any{}
	for k, v := range step {
		later[k] = v
	}
	later["type"] = []any{"null", "object"}
	s, _ := tk.Schema("plan")
	jsonEqual(t, "parameters", s.Function.Parameters, map[string]any{
		"type": "object",
		"properties": map[string]any{
			"first": step,
			"later": later,
			"steps": map[string]any{"type": []any{"null", "array"}, "items": step},
		},
		"required":             []any{"first"},
		"additionalProperties": false,
	})

	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "plan", Input: map[string]any{
		"first": map[string]any{"mode": "fast"},
		"later": map[string]any{"mode": "slow"},
		"steps": []any{map[string]any{"mode": "slow", "level": 2}, map[string]any{"mode": "fast"}},
	}})
	if r.State != toolkit.StateSuccess || r.Text() != "fast/5 slow/5 slow/2 fast/5" {
		t.Errorf("final = %s %q, want success %q", r.State, r.Text(), "fast/5 slow/5 slow/2 fast/5")
	}
	for _, in := range []map[string]any{
		{"first": map[string]any{"mode": "warp"}},
		{"first": map[string]any{"mode": "fast", "level": 11}},
		{"first": map[string]any{"mode": "fast"}, "steps": []any{map[string]any{"mode": "fast", "level": 0}}},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "plan", Input: in})
		if r.Code != toolkit.CodeInvalidInput {
			t.Errorf("input %v: final = %s %s %q, want invalid_input", in, r.State, r.Code, r.Text())
		}
	}
}

// A default inside an array of arrays of structs is filled in, as its
// schema advertises: the tool got Go's zero value.
func TestNestedDefaultInArrayOfArrays(t *testing.T) {
	type in struct {
		Grid [][]stepIn `json:"grid"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("grid", "Grid.", func(ctx context.Context, in in) (string, error) {
		s := ""
		for _, row := range in.Grid {
			for _, st := range row {
				s += fmt.Sprintf(" %s/%d", st.Mode, st.Level)
			}
		}
		return s, nil
	}))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "grid", Input: map[string]any{
		"grid": []any{[]any{map[string]any{"mode": "fast"}, map[string]any{"mode": "slow", "level": 2}}},
	}})
	if r.State != toolkit.StateSuccess || r.Text() != " fast/5 slow/2" {
		t.Errorf("final = %s %q, want success %q", r.State, r.Text(), " fast/5 slow/2")
	}
}

// The tags of a struct held as a map's values reach the schema (as
// additionalProperties), are validated, and its defaults reach the tool:
// they were dropped as they were for nested structs.
func TestNestedStructTagsInMap(t *testing.T) {
	type in struct {
		Steps map[string]stepIn `json:"steps"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("steps", "Steps.", func(ctx context.Context, in in) (string, error) {
		return fmt.Sprintf("%s/%d", in.Steps["a"].Mode, in.Steps["a"].Level), nil
	}))
	s, _ := tk.Schema("steps")
	value := s.Function.Parameters["properties"].(map[string]any)["steps"].(map[string]any)["additionalProperties"]
	jsonEqual(t, "map value schema", value, map[string]any{
		"type": "object",
		"properties": map[string]any{
			"mode":  map[string]any{"type": "string", "enum": []any{"fast", "slow"}},
			"level": map[string]any{"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
		},
		"required":             []any{"mode"},
		"additionalProperties": false,
	})
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "steps", Input: map[string]any{
		"steps": map[string]any{"a": map[string]any{"mode": "fast"}},
	}})
	if r.State != toolkit.StateSuccess || r.Text() != "fast/5" {
		t.Errorf("final = %s %q, want success %q", r.State, r.Text(), "fast/5")
	}
	r = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "steps", Input: map[string]any{
		"steps": map[string]any{"a": map[string]any{"mode": "warp"}},
	}})
	if r.Code != toolkit.CodeInvalidInput {
		t.Errorf("mode warp: final = %s %s %q, want invalid_input", r.State, r.Code, r.Text())
	}
}

// An absent object property whose default is an object gets its nested
// defaults too: the tool got the default object with Go's zero values in it.
func TestNestedDefaultsInDefaultObject(t *testing.T) {
	type in struct {
		First stepIn `json:"first,omitempty" default:"{\"mode\":\"slow\"}"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("first", "First.", func(ctx context.Context, in in) (string, error) {
		return fmt.Sprintf("%s/%d", in.First.Mode, in.First.Level), nil
	}))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "first", Input: map[string]any{}})
	if r.State != toolkit.StateSuccess || r.Text() != "slow/5" {
		t.Errorf("final = %s %q, want success %q", r.State, r.Text(), "slow/5")
	}
}
