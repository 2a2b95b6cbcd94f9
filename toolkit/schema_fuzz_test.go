package toolkit_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// FuzzRawSchemaCall: a raw-schema tool (an MCP server's schema is one)
// either fails registration with an error, or every call of it ends in
// exactly one final with the call's id: success only when the tool ran,
// an error with its code and a message otherwise. Neither a schema nor an
// input built to cost (deep, recursive, wide) crashes the call.
func FuzzRawSchemaCall(f *testing.F) {
	for _, s := range [][2]string{
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`, `{"a":1}`},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`, `{"a":"x"}`},
		{`{"$defs":{"n":{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`, `{"x":{"x":{"x":{}}}}`},
		{`{"$defs":{"n":{"anyOf":[{"properties":{"x":{"$ref":"#/$defs/n"}}},{"properties":{"x":{"$ref":"#/$defs/n"}}}]}},"$ref":"#/$defs/n"}`, `{"x":{"x":{"x":{"x":{"x":{"x":{}}}}}}}`},
		{`{"$ref":"#"}`, `{}`},
		{`{"type":"object","additionalProperties":{"type":"array","items":{"type":"number","multipleOf":0.1}}}`, `{"a":[0.3,1e308,-0]}`},
		{`{"type":"object","patternProperties":{"^a+$":{"type":"string","pattern":"(a|a)*b"}}}`, `{"aaa":"aaaaaaaaaaaaaaaaaaaaaaaa"}`},
		{`{"type":"object","properties":{"s":{"type":"string","format":"date-time","minLength":2}}}`, `{'s': "x",}`},
		{`{"oneOf":[{"type":"object"},{"not":{"type":"object"}}],"if":{"required":["a"]},"then":{"required":["b"]}}`, `{"a":1}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, schemaText, input string) {
		var schema map[string]any
		if json.Unmarshal([]byte(schemaText), &schema) != nil || schema == nil {
			return
		}
		ran := 0
		tk := toolkit.New(nil)
		err := tk.Add(toolkit.Raw("t", "T.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			ran++
			return w.Write(toolkit.Text("ok"))
		}))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty registration error")
			}
			return
		}
		for _, call := range []toolkit.ToolCall{{ID: "c1", Name: "t", RawInput: input}, {ID: "c2", Name: "t", Input: map[string]any{"v": input}}} {
			ran = 0
			finals := 0
			var final *toolkit.Response
			for ev := range tk.Call(context.Background(), call) {
				if ev.Final != nil {
					finals++
					final = ev.Final
				}
			}
			if finals != 1 || final.ID != call.ID {
				t.Fatalf("%d finals, last %+v", finals, final)
			}
			switch final.State {
			case toolkit.StateSuccess:
				if ran != 1 {
					t.Fatalf("success, the tool ran %d times", ran)
				}
			case toolkit.StateError:
				if ran != 0 || final.Code != toolkit.CodeInvalidInput || final.Text() == "" {
					t.Fatalf("an error after %d runs: %s %q", ran, final.Code, final.Text())
				}
			default:
				t.Fatalf("state %s", final.State)
			}
		}
	})
}
