package main

import (
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestParamSummary: an input the tool's schema refuses ended with the
// validator's word of what is wrong alone; toolctl now says what the
// tool takes: its parameters in declaration order, their types and
// which are required.
func TestParamSummary(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"text":   map[string]any{"type": "string"},
			"ranges": map[string]any{"type": []any{"null", "array"}},
			"any":    map[string]any{},
		},
		"required": []any{"text"},
	}
	order := []toolkit.KeyOrder{{Path: "/properties", Keys: []string{"text", "ranges", "any"}}}
	many := map[string]any{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v"} {
		many[n] = map[string]any{"type": "string"}
	}
	for _, tt := range []struct {
		name   string
		schema map[string]any
		order  []toolkit.KeyOrder
		want   string
	}{
		{"in order", schema, order, "a JSON object of: text (string, required), ranges (null or array), any (any)"},
		{"sorted without an order", schema, nil, "a JSON object of: any (any), ranges (null or array), text (string, required)"},
		{"no parameters", map[string]any{"type": "object"}, nil, "no parameters: give {}"},
		{"bounded", map[string]any{"properties": many}, nil, "a JSON object of: a (string), b (string), c (string), d (string), e (string), f (string), g (string), h (string), i (string), j (string), " +
			"k (string), l (string), m (string), n (string), o (string), p (string), q (string), r (string), s (string), t (string), and 2 more"},
		{"unprintable name", map[string]any{"properties": map[string]any{"a\x1b[2J": map[string]any{"type": "string"}}}, nil, `a JSON object of: "a\x1b[2J" (string)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := paramSummary(tt.schema, tt.order); got != tt.want {
				t.Errorf("paramSummary =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
