package toolkit_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// TestPresetOutsideItsSchema: a preset whose value its property's schema
// refuses (a string for an int field, 1.5 for an integer) was accepted at
// Add, and every call of the tool then ended invalid_input, telling the
// model its input was wrong and, for a number, quoting the preset
// ("cannot unmarshal number 1234.5 into Go struct field"), a value
// presets exist to keep from the model. It is refused at Add, without its
// value in the error; one the schema takes (through a $ref too) stays
// accepted.
func TestPresetOutsideItsSchema(t *testing.T) {
	type in struct {
		Q   string `json:"q"`
		PIN int    `json:"pin"`
	}
	typed := func(name string) *toolkit.Tool {
		return toolkit.Func(name, "T.", func(_ context.Context, i in) (string, error) { return i.Q + strconv.Itoa(i.PIN), nil })
	}
	raw := toolkit.Raw("raw", "R.", map[string]any{
		"type":       "object",
		"properties": map[string]any{"q": map[string]any{"type": "string"}, "acct": map[string]any{"$ref": "#/$defs/Acct"}},
		"$defs":      map[string]any{"Acct": map[string]any{"type": "string", "pattern": "^[0-9]+$"}},
		"required":   []any{"q", "acct"},
	}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("ok"))
	})
	for _, c := range []struct {
		tool    *toolkit.Tool
		preset  map[string]any
		refused bool
	}{
		{typed("string_for_int"), map[string]any{"pin": "98765"}, true},
		{typed("fraction_for_int"), map[string]any{"pin": 1234.5}, true},
		{raw, map[string]any{"acct": "no digits"}, true},
		{typed("fine"), map[string]any{"pin": 1234}, false},
		{raw, map[string]any{"acct": "0042"}, false},
	} {
		t.Run(c.tool.Name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			err := tk.Add(c.tool, toolkit.WithPresets(c.preset))
			if !c.refused {
				if err != nil {
					t.Fatalf("Add refused a preset its schema takes: %v", err)
				}
				return
			}
			if err == nil {
				r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c1", Name: c.tool.Name, Input: map[string]any{"q": "x"}})
				t.Fatalf("Add accepted preset %v; a call ended %s %q", c.preset, r.Code, r.Text())
			}
			for k, v := range c.preset {
				if !strings.Contains(err.Error(), strconv.Quote(k)) {
					t.Errorf("Add error %q does not name the preset %q", err, k)
				}
				if s := strings.Trim(strconv.Quote(toString(v)), `"`); strings.Contains(err.Error(), s) {
					t.Errorf("Add error %q shows the preset's value", err)
				}
			}
		})
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return ""
}

// TestPresetTheDecoderRefuses: a preset its property's schema takes but
// the typed tool's decoder refuses (a time.Time field, a string in the
// schema, given a date in another layout) passed Add, and every call then
// ended invalid_input with encoding/json's message, which quotes the
// value: `parsing time "\"…\"" as …`, a preset shown to the model. It is
// refused at Add, without its value.
func TestPresetTheDecoderRefuses(t *testing.T) {
	type in struct {
		Q     string    `json:"q"`
		Since time.Time `json:"since"`
	}
	tool := func() *toolkit.Tool {
		return toolkit.Func("since", "S.", func(_ context.Context, i in) (string, error) { return i.Q + i.Since.String(), nil })
	}
	const secret = "06/12/2026-s3cr3t"
	tk := newToolkit(t, nil)
	err := tk.Add(tool(), toolkit.WithPresets(map[string]any{"since": secret}))
	if err == nil {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c1", Name: "since", Input: map[string]any{"q": "x"}})
		t.Fatalf("Add accepted a preset the decoder refuses; a call ended %s %q", r.Code, r.Text())
	}
	if !strings.Contains(err.Error(), `"since"`) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Add error %q: want the preset named and its value not shown", err)
	}
	if err := newToolkit(t, nil).Add(tool(), toolkit.WithPresets(map[string]any{"since": "2026-12-06T10:00:00Z"})); err != nil {
		t.Errorf("Add refused a preset the decoder takes: %v", err)
	}
}
