package toolkit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type treeNode struct {
	Name     string     `json:"name"`
	Children []treeNode `json:"children,omitempty"`
}

type dirNode struct {
	Entries map[string]*dirNode `json:"entries"`
}

// lazyNodes decodes itself (its elements later, by the tool), so the
// struct holding it is no recursive input.
type lazyNodes []lazyNode

func (l *lazyNodes) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, (*[]lazyNode)(l)) }

type lazyNode struct {
	Name     string    `json:"name"`
	Children lazyNodes `json:"children,omitempty"`
}

// A typed tool whose input type holds itself (a tree: through a slice, a
// map, a pointer) was refused at Add with jsonschema-go's words, "computing
// element schema: cycle detected for type toolkit_test.treeNode", naming
// neither the field nor what to do. Add still refuses it (jsonschema-go
// infers no schema for a recursive type), naming the field that recurs
// and the ways out; a json.RawMessage in its place is taken, and so is a
// type decoding itself (its schema any value).
func TestRecursiveInputTypeRefused(t *testing.T) {
	type forest struct {
		Trees []treeNode `json:"trees"`
	}
	tk := newToolkit(t, nil)
	for name, tool := range map[string]*toolkit.Tool{
		"tree":   toolkit.Func("tree", "T.", func(_ context.Context, in treeNode) (string, error) { return in.Name, nil }),
		"forest": toolkit.Func("forest", "F.", func(_ context.Context, in forest) (string, error) { return "", nil }),
		"dir":    toolkit.Func("dir", "D.", func(_ context.Context, in dirNode) (string, error) { return "", nil }),
	} {
		err := tk.Add(tool)
		if err == nil {
			t.Fatalf("%s: Add took a recursive input type", name)
		}
		for _, want := range []string{"recursive", "json.RawMessage", "Raw"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: Add's error %q does not say %q", name, err, want)
			}
		}
		if field := map[string]string{"tree": "Children", "forest": "Children", "dir": "Entries"}[name]; !strings.Contains(err.Error(), "field "+field) {
			t.Errorf("%s: Add's error %q does not name the field %s", name, err, field)
		}
	}
	type lazyTree struct {
		Name     string          `json:"name"`
		Children json.RawMessage `json:"children,omitempty"`
	}
	mustAdd(t, tk, toolkit.Func("lazy", "L.", func(_ context.Context, in lazyTree) (string, error) { return in.Name, nil }))
	mustAdd(t, tk, toolkit.Func("nodes", "N.", func(_ context.Context, in lazyNode) (string, error) { return in.Children[0].Name, nil }))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "nodes", Input: map[string]any{"name": "a", "children": []any{map[string]any{"name": "b"}}}})
	if r.State != toolkit.StateSuccess || r.Text() != "b" {
		t.Errorf("a tree through a type decoding itself: final %s/%s %q, want success b", r.State, r.Code, r.Text())
	}
}
