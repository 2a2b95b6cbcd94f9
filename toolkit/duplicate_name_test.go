package toolkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// Limits is embedded in the inputs of TestDuplicateJSONName.
type Limits struct {
	Max int
}

// Two fields of an input struct under one JSON name (a tag naming
// another field, or one its embedded struct promotes; two tags alike,
// which go vet warns of, too) had a schema with the name's type taken
// from the last of them and the name twice in "required", while
// encoding/json decodes the value into the one it prefers (the tagged,
// the shallower) or, between two alike, into neither: the model's value
// was dropped without a word, or no value passed both the schema and
// the decoder. Add refuses such an input, naming both fields.
func TestDuplicateJSONName(t *testing.T) {
	type tagNamesOther struct {
		Y int `json:"X"`
		X string
	}
	type tagNamesEmbedded struct {
		Top string `json:"Max"`
		Limits
	}
	type nested struct {
		N tagNamesOther `json:"n"`
	}
	type distinct struct {
		Limits
		Min int `json:"min"`
	}
	for _, c := range []struct {
		name string
		tool *toolkit.Tool
		ok   bool
	}{
		{"tag names another field", toolkit.Func("other", "O.", func(_ context.Context, in tagNamesOther) (string, error) { return "", nil }), false},
		{"tag names an embedded field", toolkit.Func("embedded", "E.", func(_ context.Context, in tagNamesEmbedded) (string, error) { return "", nil }), false},
		{"nested", toolkit.Func("nested", "N.", func(_ context.Context, in nested) (string, error) { return "", nil }), false},
		{"distinct", toolkit.Func("distinct", "D.", func(_ context.Context, in distinct) (int, error) { return in.Max + in.Min, nil }), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			err := tk.Add(c.tool)
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), "both the JSON property") {
					t.Fatalf("Add of a tool whose input has two fields under one JSON name: %v, want it refused naming them", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Add: %v", err)
			}
			r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: c.tool.Name, Input: map[string]any{"Max": 3, "min": 1}})
			if r.State != toolkit.StateSuccess || r.Text() != "4" {
				t.Errorf("final = %s/%s %q, want success 4", r.State, r.Code, r.Text())
			}
		})
	}
}
