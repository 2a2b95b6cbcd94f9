package toolkit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// nested is {"x": {"x": … leaf …}}, depth levels of "x".
func nested(depth int, leaf any) map[string]any {
	v := leaf
	for range depth {
		v = map[string]any{"x": v}
	}
	return v.(map[string]any)
}

// invokeWithin runs the call and fails t if it has not ended after limit
// (generous: a loaded two-core machine must pass). The call cannot be
// stopped: validation does not watch ctx, so a call that never ends
// spins on until the test binary exits.
func invokeWithin(t *testing.T, tk *toolkit.Toolkit, call toolkit.ToolCall, limit time.Duration) *toolkit.Response {
	t.Helper()
	done := make(chan *toolkit.Response, 1)
	go func() { done <- tk.Invoke(context.Background(), call) }()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		t.Fatalf("the call of %s did not end within %v", call.Name, limit)
		return nil
	}
}

// A schema recursive through a descent whose branches each descend again
// (an anyOf of two object schemas that both take "x" as the schema
// itself) is validated once per path: an input n levels deep applied
// ~2^n subschemas, holding a core for ever at n = 40 (validation does not
// watch ctx). Such an input is refused as too complex for its schema, at
// once; shallow inputs, invalid ones, and deep ones of a schema recursive
// without branches are checked as before.
func TestBranchingRecursiveSchemaBounded(t *testing.T) {
	ref := map[string]any{"$ref": "#/$defs/T"}
	branch := func() map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"x": ref}}
	}
	schema := map[string]any{
		"$defs":      map[string]any{"T": map[string]any{"anyOf": []any{branch(), branch()}}},
		"type":       "object",
		"properties": map[string]any{"x": ref},
	}
	// chain is recursive too, without branches: an input costs its depth.
	chain := map[string]any{
		"$defs":      map[string]any{"T": map[string]any{"type": "object", "properties": map[string]any{"x": ref}}},
		"type":       "object",
		"properties": map[string]any{"x": ref},
	}
	tk := newToolkit(t, nil)
	ran := func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("ran"))
	}
	mustAdd(t, tk, toolkit.Raw("expr", "E.", schema, ran))
	mustAdd(t, tk, toolkit.Raw("chain", "C.", chain, ran))
	cases := []struct {
		name, tool string
		input      map[string]any
		code       toolkit.Code
		text       string
	}{
		{"shallow", "expr", nested(5, map[string]any{}), "", "ran"},
		{"shallow invalid", "expr", nested(5, 7.0), toolkit.CodeInvalidInput, "Input validation failed for tool 'expr'"},
		{"deep", "expr", nested(40, map[string]any{}), toolkit.CodeInvalidInput, "InputTooComplexError: the input for tool 'expr' is nested too deeply"},
		{"deep invalid", "expr", nested(40, 7.0), toolkit.CodeInvalidInput, "InputTooComplexError: "},
		{"deep chain", "chain", nested(60, map[string]any{}), "", "ran"},
		{"deep chain invalid", "chain", nested(60, 7.0), toolkit.CodeInvalidInput, "Input validation failed for tool 'chain'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := invokeWithin(t, tk, toolkit.ToolCall{ID: "c", Name: tc.tool, Input: tc.input}, 30*time.Second)
			t.Logf("%v: %s/%s %.300q", time.Since(start), r.State, r.Code, r.Text())
			if r.Code != tc.code || !strings.Contains(r.Text(), tc.text) {
				t.Errorf("final %s/%s %.300q, want %s with %q", r.State, r.Code, r.Text(), tc.code, tc.text)
			}
		})
	}
}

// A schema whose references come back to the same value without
// descending into it is refused at Add: the validator follows them for
// ever, and the first call overflowed the stack, a fatal error that ended
// the process. So is one whose references apply more than 10,000
// subschemas to one value (a chain of anyOf of two references to the next
// link: 2^40 for any value). A schema recursive through a descent (a
// tree) is kept.
func TestSchemaReferenceLoopRefused(t *testing.T) {
	chain := map[string]any{"last": map[string]any{"type": "string"}}
	for i := range 40 {
		next := "last"
		if i < 39 {
			next = fmt.Sprintf("d%d", i+1)
		}
		ref := map[string]any{"$ref": "#/$defs/" + next}
		chain[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{ref, ref}}
	}
	props := map[string]any{}
	cases := []struct {
		name   string
		schema map[string]any
		want   string // in Add's error; "" = registered
	}{
		{"root", map[string]any{"type": "object", "properties": props, "$ref": "#"}, "cycle"},
		{"defs", map[string]any{"type": "object", "$defs": map[string]any{"a": map[string]any{"$ref": "#/$defs/b"}, "b": map[string]any{"$ref": "#/$defs/a"}},
			"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/a"}}}, "cycle"},
		{"anyOf", map[string]any{"type": "object", "properties": props, "anyOf": []any{map[string]any{"$ref": "#"}}}, "cycle"},
		{"chain", map[string]any{"type": "object", "$defs": chain, "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d0"}}}, "more than 10000 subschemas"},
		{"tree", map[string]any{"type": "object", "$defs": map[string]any{"node": map[string]any{"type": "object",
			"properties": map[string]any{"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/node"}}}}},
			"properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/node"}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			err := tk.Add(toolkit.Raw("t", "T.", tc.schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return w.Write(toolkit.Text("ran"))
			}))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Add: %v", err)
				}
				r := invokeWithin(t, tk, toolkit.ToolCall{ID: "c", Name: "t", Input: map[string]any{"root": map[string]any{"children": []any{map[string]any{}}}}}, 30*time.Second)
				if r.Text() != "ran" {
					t.Errorf("final %s/%s %.300q, want ran", r.State, r.Code, r.Text())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "invalid input schema") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Add: %v, want an invalid input schema error saying %q", err, tc.want)
			}
		})
	}
}

// A schema not recursive but whose references multiply (a chain of anyOf
// of two references to the next link, 12 links: ~8,000 applications to
// each value, under the 10,000 refused at Add) has each input's cost
// counted too: its inputs cost their size times that, and an array of
// 10,000 numbers, 20 KB, held a core for ten seconds (80 million
// applications) without being counted against the budget. It is refused
// as too complex; a short array is checked as before.
func TestMultiplyingReferencesBounded(t *testing.T) {
	defs := map[string]any{"l12": map[string]any{"type": "number"}}
	for i := 11; i >= 1; i-- {
		ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/l%d", i+1)}
		defs[fmt.Sprintf("l%d", i)] = map[string]any{"anyOf": []any{ref, ref}}
	}
	schema := map[string]any{"type": "object", "$defs": defs,
		"properties": map[string]any{"xs": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/l1"}}}}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("t", "T.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("ran"))
	}))
	numbers := func(n int, v any) []any {
		xs := make([]any, n)
		for i := range xs {
			xs[i] = v
		}
		return xs
	}
	cases := []struct {
		name  string
		input []any
		code  toolkit.Code
		text  string
	}{
		{"short", numbers(3, 1.0), "", "ran"},
		{"short invalid", numbers(3, "a"), toolkit.CodeInvalidInput, "Input validation failed for tool 't'"},
		{"long", numbers(10_000, 1.0), toolkit.CodeInvalidInput, "InputTooComplexError: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The long array's cost is told by its refusal, not by a
			// time (a loaded machine takes seconds for the short ones).
			r := invokeWithin(t, tk, toolkit.ToolCall{ID: "c", Name: "t", Input: map[string]any{"xs": tc.input}}, 30*time.Second)
			if r.Code != tc.code || !strings.Contains(r.Text(), tc.text) {
				t.Errorf("final %s/%s %.300q, want %s with %q", r.State, r.Code, r.Text(), tc.code, tc.text)
			}
		})
	}
}
