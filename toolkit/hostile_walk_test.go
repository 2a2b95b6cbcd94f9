package toolkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// walkNode is a result a function tool may return: a chain through
// Next, or a value doubling at each level through A and B.
type walkNode struct {
	Name string    `json:"name,omitempty"`
	Next *walkNode `json:"next,omitempty"`
	A    *walkNode `json:"a,omitempty"`
	B    *walkNode `json:"b,omitempty"`
}

// TestHostileResultDeepOrDoubling: a function tool's result that is a
// chain of structs or lists a million deep, a value a few hundred bytes
// in memory that doubles at each of forty levels when written (two
// fields or map values holding the same next node), or a list a few MiB
// in memory holding the same list of strings (or the same
// json.RawMessage) so many times that it writes gigabytes, ends its call
// tool_error saying so, where encoding/json recursed until the stack
// overflowed (a crash no recover catches) or wrote, in memory, until the
// process was killed, every call in it lost; the same shapes a few
// levels deep are written as encoding/json writes them. In a child
// process, as the crash is no panic a test survives.
func TestHostileResultDeepOrDoubling(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_RESULT_WALK_CHILD") {
		return
	}
	chain := &walkNode{Name: "leaf"}
	for range 1_000_000 {
		chain = &walkNode{Next: chain}
	}
	var list any = "leaf"
	for range 1_000_000 {
		list = []any{list}
	}
	doubling := func(depth int) *walkNode {
		var n *walkNode
		for range depth {
			n = &walkNode{A: n, B: n}
		}
		return n
	}
	inner := make([]string, 1000)
	for i := range inner {
		inner[i] = strings.Repeat("x", 100)
	}
	sameList := make([][]string, 100_000)
	for i := range sameList {
		sameList[i] = inner
	}
	raw := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	sameRaw := make([]json.RawMessage, 1000)
	for i := range sameRaw {
		sameRaw[i] = raw
	}
	mapDoubling := func(depth int) map[string]any {
		var m map[string]any
		for range depth {
			m = map[string]any{"a": m, "b": m}
		}
		return m
	}
	tk := newToolkit(t, nil)
	for i, tt := range []struct {
		name, want string
		out        any
	}{
		{"a chain of structs", "nested deeper than 10000", chain},
		{"a chain of lists", "nested deeper than 10000", list},
		{"a struct doubling forty times", "would encode to more than 64 MiB", doubling(40)},
		{"a list holding one list of strings 100,000 times", "would encode to more than 64 MiB", sameList},
		{"a list holding one 1 MiB json.RawMessage 1000 times", "would encode to more than 64 MiB", sameRaw},
		{"a map[string]any DAG", "would encode to more than 64 MiB", mapDoubling(40)},
	} {
		name := "w" + string(rune('a'+i))
		mustAdd(t, tk, toolkit.Func(name, "W.", func(ctx context.Context, in struct{}) (any, error) { return tt.out, nil }))
		r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: name})
		if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeToolError || !strings.Contains(r.final.Text(), tt.want) {
			t.Errorf("%s: final = %s/%q %q, want tool_error saying %q", tt.name, r.final.State, r.final.Code, r.final.Text(), tt.want)
		}
	}
	small := doubling(8)
	want, err := json.Marshal(small)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("small", "S.", func(ctx context.Context, in struct{}) (*walkNode, error) { return small, nil }))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "2", Name: "small"})
	var got bytes.Buffer
	if r.final.State != toolkit.StateSuccess || json.Compact(&got, []byte(r.final.Text())) != nil || got.String() != string(want) {
		t.Errorf("a struct doubling eight times: final = %s %.80q…, want success with encoding/json's %.80q… (spaced as json.dumps spaces it)", r.final.State, r.final.Text(), want)
	}
}

// walkWrapped writes itself (its MarshalJSON on its pointer) where
// encoding/json can take its address, and its fields elsewhere.
type walkWrapped struct {
	Deep *walkNode `json:"deep"`
}

func (w *walkWrapped) MarshalJSON() ([]byte, error) { return []byte(`"wrapped"`), nil }

// TestHostileResultBehindPointerMarshaler: a function tool's result
// holding, as a map's value or in an interface (where encoding/json
// cannot take its address, so writes its fields rather than call its
// MarshalJSON, which is on its pointer), a value whose field is a chain
// a million deep ends its call tool_error saying it is nested too deep,
// where the walk took the value for one writing itself and encoding/json
// recursed until the stack overflowed; in a list (addressable) the
// method writes it. In a child process, as the crash is no panic a test
// survives.
func TestHostileResultBehindPointerMarshaler(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_RESULT_PTR_MARSHALER_CHILD") {
		return
	}
	chain := &walkNode{Name: "leaf"}
	for range 1_000_000 {
		chain = &walkNode{Next: chain}
	}
	w := walkWrapped{Deep: chain}
	for name, v := range map[string]any{
		"a map's value":                 map[string]walkWrapped{"w": w},
		"a struct in a map's value":     map[string]struct{ W walkWrapped }{"w": {w}},
		"an interface in a list":        []any{w},
		"an interface in a map[string]": map[string]any{"w": w},
	} {
		if _, err := toolkit.ValueChunk(v); err != toolkit.ErrNestedTooDeep {
			t.Errorf("%s: %v, want %v", name, err, toolkit.ErrNestedTooDeep)
		}
	}
	c, err := toolkit.ValueChunk([]walkWrapped{w})
	if err != nil || c.Content[0].Text != `["wrapped"]` {
		t.Errorf("in a list: %v %+v, want [\"wrapped\"]", err, c)
	}
}
