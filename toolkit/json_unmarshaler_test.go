package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// wait decodes itself from a JSON string ("5s"), though it is a struct.
type wait struct{ D time.Duration }

func (w *wait) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := time.ParseDuration(s)
	w.D = d
	return err
}

// source decodes itself from a JSON string, naming one of its sources;
// its field is no input.
type source struct{ S fmt.Stringer }

func (s *source) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	s.S = time.Duration(len(name))
	return nil
}

// level decodes itself from a JSON string ("low", "high"), though it is
// an int.
type level int

func (l *level) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	switch s {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("unknown level %q", s)
	}
	return nil
}

// A field whose type decodes itself from JSON (a json.Unmarshaler) had
// the schema of its Go kind (an object of its fields for a struct read
// from a string, an integer for an int read from a name), so the value
// its UnmarshalJSON takes failed the schema and no input the schema took
// decoded: the tool never ran. Its schema is now {}, any value, which
// its UnmarshalJSON judges; time.Time and big.Int keep theirs. Its own
// fields are no input, and no longer refused at Add (a field of an
// interface type).
func TestJSONUnmarshalerFieldTakesAnyValue(t *testing.T) {
	type in struct {
		Wait   wait    `json:"wait" jsonschema:"how long, as 5s"`
		Level  level   `json:"level"`
		Maybe  *wait   `json:"maybe"`
		Levels []level `json:"levels"`
		Inner  struct {
			Wait wait `json:"wait"`
		} `json:"inner"`
		Since time.Time `json:"since"`
		From  source    `json:"from,omitempty"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("sleep", "S.", func(_ context.Context, in in) (string, error) {
		return fmt.Sprint(in.Wait.D, " ", in.Level, " ", in.Maybe.D, " ", in.Levels, " ", in.Inner.Wait.D, " ", in.Since.Year()), nil
	}))
	s, _ := tk.Schema("sleep")
	props := s.Function.Parameters["properties"].(map[string]any)
	for name, want := range map[string]map[string]any{
		"wait":   {"description": "how long, as 5s"},
		"level":  {},
		"maybe":  {},
		"levels": {"type": []any{"null", "array"}, "items": map[string]any{}},
		"since":  {"type": "string"},
	} {
		if got := props[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("schema of %s: %v, want %v", name, got, want)
		}
	}
	if got := props["inner"].(map[string]any)["properties"].(map[string]any)["wait"]; !reflect.DeepEqual(got, map[string]any{}) {
		t.Errorf("schema of inner.wait: %v, want {}", got)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "sleep", Input: map[string]any{
		"wait": "5s", "level": "high", "maybe": "1m", "levels": []any{"low", "high"},
		"inner": map[string]any{"wait": "2h"}, "since": "2024-01-02T03:04:05Z",
	}})
	if want := "5s 2 1m0s [1 2] 2h0m0s 2024"; r.State != toolkit.StateSuccess || r.Text() != want {
		t.Errorf("final = %s/%s %q, want success %q", r.State, r.Code, r.Text(), want)
	}
	r = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "sleep", Input: map[string]any{
		"wait": "5s", "level": "medium", "maybe": nil, "levels": nil,
		"inner": map[string]any{"wait": "2h"}, "since": "2024-01-02T03:04:05Z",
	}})
	if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), `unknown level "medium"`) {
		t.Errorf("a level UnmarshalJSON refuses: final %s/%s %q, want invalid_input quoting its error", r.State, r.Code, r.Text())
	}
}

// TestEmbeddedJSONUnmarshalerRefused: an input struct embedding a type
// that decodes itself (wait's UnmarshalJSON), with a json name or not,
// is refused at Add naming the field and the way out, a named field.
// jsonschema-go refused it in its own words ("custom schema for embedded
// struct must have type \"object\""), as its schema is no object's, and
// its method, promoted, would decode the whole input, the struct's other
// fields never set. A named field is a property taking what its method
// takes.
func TestEmbeddedJSONUnmarshalerRefused(t *testing.T) {
	type embedsWait struct {
		wait
		Name string `json:"name"`
	}
	type embedsWaitNamed struct {
		wait `json:"wait"`
		Name string `json:"name"`
	}
	for name, tool := range map[string]*toolkit.Tool{
		"embedded":             toolkit.Func("t", "d", func(context.Context, embedsWait) (string, error) { return "", nil }),
		"embedded with a name": toolkit.Func("t", "d", func(context.Context, embedsWaitNamed) (string, error) { return "", nil }),
	} {
		err := toolkit.New(nil).Add(tool)
		if err == nil || !strings.Contains(err.Error(), "field wait of") || !strings.Contains(err.Error(), "field of its own name") {
			t.Errorf("%s: Add: %v, want an error naming the field wait and the way out", name, err)
		}
	}
	type namesWait struct {
		Wait wait   `json:"wait"`
		Name string `json:"name"`
	}
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("t", "d", func(_ context.Context, in namesWait) (string, error) {
		return in.Wait.D.String() + " " + in.Name, nil
	})); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{Name: "t", Input: map[string]any{"wait": "5s", "name": "n"}})
	if r.State != toolkit.StateSuccess || r.Text() != "5s n" {
		t.Fatalf("a named field: %s %s", r.State, r.Text())
	}
}

// search decodes itself from the whole input: its query as "q" or
// "query", trimmed, and a limit of 10 when none is sent. Its fields say
// nothing of that.
type search struct {
	Q     string `json:"q"`
	Limit int    `json:"limit"`
}

func (s *search) UnmarshalJSON(b []byte) error {
	var raw struct {
		Q, Query string
		Limit    *int
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	s.Q = strings.TrimSpace(raw.Q + raw.Query)
	if s.Q == "" {
		return fmt.Errorf("q or query is required")
	}
	s.Limit = 10
	if raw.Limit != nil {
		s.Limit = *raw.Limit
	}
	return nil
}

// An input struct decoding itself (its own UnmarshalJSON) had the schema
// of its fields, closed and requiring them, so input its method takes
// ({"query": "go"}) ended invalid_input and never reached it, and input
// of the fields' shape was put in the fields without it (untrimmed, no
// default limit). Its schema is now an open object, {"type": "object",
// "properties": {}}, and every input is its method's to judge; a schema
// set on the Tool before Add still wins.
func TestJSONUnmarshalerInputOpenObject(t *testing.T) {
	run := func(_ context.Context, in search) (string, error) { return fmt.Sprint(in.Q, " ", in.Limit), nil }
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("search", "S.", run))
	s, _ := tk.Schema("search")
	if want := map[string]any{"type": "object", "properties": map[string]any{}}; !reflect.DeepEqual(s.Function.Parameters, want) {
		t.Errorf("schema: %v, want %v", s.Function.Parameters, want)
	}
	if got, err := toolkit.SchemaFor[*search](); err != nil || !reflect.DeepEqual(got, map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("SchemaFor: %v, %v, want an open object", got, err)
	}
	for _, c := range []struct {
		input map[string]any
		want  string
	}{
		{map[string]any{"query": " go "}, "go 10"},
		{map[string]any{"q": " x ", "limit": 3}, "x 3"},
		{map[string]any{"q": "x"}, "x 10"},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "search", Input: c.input})
		if r.State != toolkit.StateSuccess || r.Text() != c.want {
			t.Errorf("input %v: final %s/%s %q, want success %q", c.input, r.State, r.Code, r.Text(), c.want)
		}
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "search", Input: map[string]any{"limit": 3}})
	if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "q or query is required") {
		t.Errorf("its method refuses: final %s/%s %q, want invalid_input quoting its error", r.State, r.Code, r.Text())
	}

	own := toolkit.Func("search", "S.", run)
	own.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []any{"query"}}
	tk = newToolkit(t, nil)
	mustAdd(t, tk, own)
	s, _ = tk.Schema("search")
	if props := s.Function.Parameters["properties"].(map[string]any); len(props) != 1 || props["query"] == nil {
		t.Errorf("a schema set on the Tool: %v, want it", s.Function.Parameters)
	}
	r = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "3", Name: "search", Input: map[string]any{"q": "x"}})
	if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "query") {
		t.Errorf("a schema set on the Tool refuses: final %s/%s %q, want invalid_input", r.State, r.Code, r.Text())
	}
}

// scaled is an input type that decodes itself: its UnmarshalJSON reads
// "a" and keeps ten times it.
type scaled struct {
	A int `json:"a"`
}

func (s *scaled) UnmarshalJSON(b []byte) error {
	var m struct{ A int }
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	s.A = m.A * 10
	return nil
}

// scaledNested is scaled with a field the flat decode does not take.
type scaledNested struct {
	A int      `json:"a"`
	L []string `json:"l,omitempty"`
}

func (s *scaledNested) UnmarshalJSON(b []byte) error {
	var m struct{ A int }
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	s.A = m.A * 10
	return nil
}

// TestInputTypeUnmarshalJSONDecodesIt: a Func or Stream whose input type
// decodes itself (UnmarshalJSON) got its fields set straight from the
// input, its method never called, when they were all scalars (the flat
// decode), and through its method otherwise: the tool's input depended
// on a field's kind. The method decodes it always, as encoding/json
// does.
func TestInputTypeUnmarshalJSONDecodesIt(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("flat", "F.", func(_ context.Context, in scaled) (string, error) { return fmt.Sprint(in.A), nil }))
	mustAdd(t, tk, toolkit.Func("nested", "N.", func(_ context.Context, in scaledNested) (string, error) { return fmt.Sprint(in.A), nil }))
	mustAdd(t, tk, toolkit.Stream("stream", "S.", func(_ context.Context, in scaled, w toolkit.Writer) error {
		return w.Write(toolkit.Text(fmt.Sprint(in.A)))
	}))
	for _, name := range []string{"flat", "nested", "stream"} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: name, Input: map[string]any{"a": 2}})
		if r.State != toolkit.StateSuccess || r.Text() != "20" {
			t.Errorf("%s: final %s/%s %q, want success \"20\" (its UnmarshalJSON's)", name, r.State, r.Code, r.Text())
		}
	}
}
