package toolkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type paging struct {
	Page int `json:"page"`
}

// Paging is paging exported.
type Paging struct {
	Page int `json:"page"`
}

// An input struct embedding a pointer to an unexported struct type has
// its fields in the schema, while encoding/json cannot allocate the
// struct to decode them into ("json: cannot set embedded pointer to
// unexported struct"): every call the schema let through failed
// invalid_input, the model blamed for the tool's type. It is refused at
// Add; a pointer to an exported type, or the struct embedded as a value,
// decodes.
func TestEmbeddedPointerToUnexportedStruct(t *testing.T) {
	type byPointer struct {
		*paging
		Q string `json:"q"`
	}
	type nested struct {
		Inner struct {
			*paging
		} `json:"inner"`
	}
	type exported struct {
		*Paging
		Q string `json:"q"`
	}
	type byValue struct {
		paging
		Q string `json:"q"`
	}
	for _, c := range []struct {
		name string
		tool *toolkit.Tool
		ok   bool
	}{
		{"pointer", toolkit.Func("ptr", "P.", func(_ context.Context, in byPointer) (string, error) { return "", nil }), false},
		{"nested", toolkit.Func("nested", "N.", func(_ context.Context, in nested) (string, error) { return "", nil }), false},
		{"exported", toolkit.Func("exported", "E.", func(_ context.Context, in exported) (int, error) { return in.Page, nil }), true},
		{"value", toolkit.Func("value", "V.", func(_ context.Context, in byValue) (int, error) { return in.Page, nil }), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			err := tk.Add(c.tool)
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), "embedded pointer") {
					t.Fatalf("Add of a tool whose input embeds *paging: %v, want it refused naming the embedded pointer", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Add: %v", err)
			}
			r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: c.tool.Name, Input: map[string]any{"page": 3, "q": "x"}})
			if r.State != toolkit.StateSuccess || r.Text() != "3" {
				t.Errorf("final = %s/%s %q, want success 3", r.State, r.Code, r.Text())
			}
		})
	}
}
