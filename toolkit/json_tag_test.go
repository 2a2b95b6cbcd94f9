package toolkit_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A json tag name encoding/json rejects (a backslash, a quote, a comma-free
// name with characters it refuses) named the schema's property and the
// fast path's key, while encoding/json ignores such a tag and uses the Go
// field name: a struct decoded by encoding/json (any non-flat one) got the
// zero value for a field the schema made required. The tag is refused at
// registration; until it was, the value the model sent was lost.
func TestInvalidJSONTagName(t *testing.T) {
	type quoted struct {
		Q    string   `json:"q'"`
		Tags []string `json:"tags,omitempty"` // not flat: encoding/json decodes
	}
	type backslash struct {
		Q    string   `json:"a\\b"`
		Tags []string `json:"tags,omitempty"`
	}
	type inner struct {
		Q string `json:"q\""`
	}
	type nested struct {
		Items []inner `json:"items"`
	}
	cases := []struct {
		name, field, tag string
		tool             *toolkit.Tool
		input            map[string]any
	}{
		{"quote", "Q", `q'`, toolkit.Func("quote", "Q.", func(_ context.Context, in quoted) (string, error) { return in.Q, nil }),
			map[string]any{"q'": "hi"}},
		{"backslash", "Q", `a\b`, toolkit.Func("backslash", "B.", func(_ context.Context, in backslash) (string, error) { return in.Q, nil }),
			map[string]any{`a\b`: "hi"}},
		{"nested", "Q", `q"`, toolkit.Func("nested", "N.", func(_ context.Context, in nested) (string, error) {
			if len(in.Items) != 1 {
				return "", nil
			}
			return in.Items[0].Q, nil
		}), map[string]any{"items": []any{map[string]any{`q"`: "hi"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			err := tk.Add(c.tool)
			if err == nil {
				// Accepted: the property the schema names must reach the tool.
				r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "c1", Name: c.tool.Name, Input: c.input})
				t.Fatalf("Add accepted json tag %q; the call's final is %q (%s) with text %q, want the tag refused", c.tag, r.final.State, r.final.Code, r.chunkText())
			}
			for _, want := range []string{"field " + c.field, strconv.Quote(c.tag), "encoding/json"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Add error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// Names encoding/json accepts stay accepted: punctuation it allows, "-"
// spelled "-,", and an empty name (the field's own).
func TestValidJSONTagNames(t *testing.T) {
	type in struct {
		A string `json:"a-b.c/d:e@f"`
		B string `json:"-,"`
		C string `json:",omitempty"`
		D string `json:"ünï"`
	}
	if _, err := toolkit.SchemaFor[in](); err != nil {
		t.Fatal(err)
	}
}

// A json tag's string option (`json:"n,string"`) makes encoding/json
// decode the field from a JSON string holding its value ("5" for an int,
// "\"a\"" for a string), while the inferred schema asks for the field's
// own type: an input that follows the schema failed to decode, and one
// that did not failed validation, so the field could never be set (every
// call of a tool that required it ended invalid_input). The option is
// refused at registration, on a nested struct's fields too; on a field
// encoding/json ignores it for (a slice, a struct), it stays accepted.
func TestJSONTagStringOption(t *testing.T) {
	type count struct {
		N int `json:"n,string"`
	}
	type name struct {
		S *string `json:"s,omitempty,string"`
	}
	type inner struct {
		B bool `json:",string"`
	}
	type nested struct {
		Items []inner `json:"items"`
	}
	for _, tool := range []*toolkit.Tool{
		toolkit.Func("count", "C.", func(_ context.Context, in count) (string, error) { return strconv.Itoa(in.N), nil }),
		toolkit.Func("name", "N.", func(_ context.Context, in name) (string, error) { return "", nil }),
		toolkit.Func("nested", "N.", func(_ context.Context, in nested) (string, error) { return "", nil }),
	} {
		t.Run(tool.Name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			err := tk.Add(tool)
			if err == nil {
				t.Fatal("Add accepted a json tag's string option")
			}
			if !strings.Contains(err.Error(), "string option") {
				t.Errorf("Add error %q does not name the string option", err)
			}
		})
	}
	type ignored struct {
		L []int `json:"l,string"`
	}
	if _, err := toolkit.SchemaFor[ignored](); err != nil {
		t.Errorf("a string option encoding/json ignores: %v", err)
	}
	// Without the fix, the schema's own input failed to decode:
	tk := newToolkit(t, nil)
	if err := tk.Add(toolkit.Func("ignored", "I.", func(_ context.Context, in ignored) (string, error) { return strconv.Itoa(len(in.L)), nil })); err != nil {
		t.Fatal(err)
	}
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c1", Name: "ignored", Input: map[string]any{"l": []any{1, 2}}}); r.Text() != "2" {
		t.Errorf("a string option encoding/json ignores: %s %q", r.Code, r.Text())
	}
}

// A field of a non-empty interface type (fmt.Stringer, error) has the
// schema {} (any value), while encoding/json decodes nothing but null into
// it: every input the schema let through for it failed the decoder, the
// model blamed for the tool's type. It is refused at Add, as a field the
// model could never set; one tagged "-" is not an input field.
func TestNonEmptyInterfaceField(t *testing.T) {
	type stringer struct {
		S fmt.Stringer `json:"s"`
	}
	type inList struct {
		Errs []error `json:"errs,omitempty"`
	}
	type skipped struct {
		Text string       `json:"text"`
		S    fmt.Stringer `json:"-"`
	}
	type anyField struct {
		V any `json:"v"`
	}
	for _, c := range []struct {
		name string
		tool *toolkit.Tool
		ok   bool
	}{
		{"stringer", toolkit.Func("stringer", "S.", func(_ context.Context, in stringer) (string, error) { return "", nil }), false},
		{"errors in a list", toolkit.Func("errs", "E.", func(_ context.Context, in inList) (string, error) { return "", nil }), false},
		{"tagged -", toolkit.Func("skipped", "K.", func(_ context.Context, in skipped) (string, error) { return in.Text, nil }), true},
		{"empty interface", toolkit.Func("anyfield", "A.", func(_ context.Context, in anyField) (string, error) { return "", nil }), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := newToolkit(t, nil).Add(c.tool)
			if c.ok && err != nil {
				t.Fatalf("Add: %v", err)
			}
			if !c.ok && (err == nil || !strings.Contains(err.Error(), "interface")) {
				t.Fatalf("Add of a tool whose input has a non-empty interface field: %v, want it refused naming the interface", err)
			}
		})
	}
}
