package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestRawArgumentsAreRepaired: a model's arguments string is parsed, and
// repaired when it is broken the common ways (AgentScope 2.x's
// _json_loads_with_repair); what cannot be repaired is answered with
// AgentScope's ToolJSONDecodeError text.
func TestRawArgumentsAreRepaired(t *testing.T) {
	repaired := []struct{ name, raw, want string }{
		{"strict", `{"text": "hi", "n": 2}`, `{"n":2,"text":"hi"}`},
		{"trailing comma", `{"text": "hi", "n": 2,}`, `{"n":2,"text":"hi"}`},
		{"trailing comma in an array", `{"l": [1, 2,], "text": "x"}`, `{"l":[1,2],"text":"x"}`},
		{"unquoted keys", `{text: "hi", n: 2}`, `{"n":2,"text":"hi"}`},
		{"single quotes", `{'text': 'it\'s "fine"'}`, `{"text":"it's \"fine\""}`},
		{"python literals", `{"a": True, "b": False, "c": None, "text": "x"}`, `{"a":true,"b":false,"c":null,"text":"x"}`},
		{"truncated closing brace", `{"text": "hi", "l": [1, 2`, `{"l":[1,2],"text":"hi"}`},
		{"truncated string", `{"text": "hel`, `{"text":"hel"}`},
		{"escapes kept", `{"text": "a\nb\u00e9",}`, `{"text":"a\nbé"}`},
	}
	for _, tt := range repaired {
		t.Run(tt.name, func(t *testing.T) {
			in, err := toolkit.ParseRawInput(tt.raw)
			if err != nil {
				t.Fatalf("ParseRawInput(%q): %v", tt.raw, err)
			}
			if got := string(mustJSON(t, in)); got != tt.want {
				t.Errorf("ParseRawInput(%q) = %s, want %s", tt.raw, got, tt.want)
			}
		})
	}

	broken := []struct{ name, raw, want string }{
		{"not an object", `[1, 2]`, "Error: Your argument string is decoded into a <class 'list'> object, but a dict object is expected!"},
		{"garbage", `{"text" "hi"}`, "Error: When decoding your tool arguments from JSON format to a Python dictionary, a JSONDecodeError was raised with message: "},
		{"prose", `please echo hi`, "a JSONDecodeError was raised"},
	}
	for _, tt := range broken {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toolkit.ParseRawInput(tt.raw)
			if err == nil || !strings.HasPrefix(err.Error(), "<system-reminder>") || !strings.Contains(err.Error(), tt.want) ||
				!strings.HasSuffix(err.Error(), "**You should recorrect the arguments in JSON format.**</system-reminder>") {
				t.Fatalf("ParseRawInput(%q) = %v", tt.raw, err)
			}
		})
	}
	// The snippet shows the input as Python's repr; a long one is cut.
	_, err := toolkit.ParseRawInput(`{"text": 'it"s'` + strings.Repeat("x", 300))
	if err == nil || !strings.Contains(err.Error(), `your_tool_arguments = '{"text": \'it"s\'x`) || !strings.Contains(err.Error(), "[TRUNCATE]") ||
		!strings.Contains(err.Error(), `(Because the JSON string is too long, a truncated label "[TRUNCATE]" is used here to indicate the truncation)`) {
		t.Fatalf("long input: %v", err)
	}

	// Through the toolkit: repaired arguments reach the tool and its
	// validation; broken ones end invalid_input with the text.
	tk := toolkit.New(nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in echoIn) (string, error) { return in.Text, nil })); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "echo", RawInput: `{text: 'repaired',}`}); r.Text() != "repaired" {
		t.Errorf("repaired call: %s %q", r.Code, r.Text())
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "2", Name: "echo", RawInput: `{"text": 3}`}); r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "Input validation failed") {
		t.Errorf("repaired but invalid: %s %q", r.Code, r.Text())
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "3", Name: "echo", RawInput: `echo this`}); r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "recorrect the arguments") {
		t.Errorf("broken: %s %q", r.Code, r.Text())
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "4", Name: "echo", RawInput: `{}`, Input: map[string]any{"text": "x"}}); r.Code != toolkit.CodeInvalidInput {
		t.Errorf("both: %s %q", r.Code, r.Text())
	}
}

// FuzzParseRawInput: whatever the text, ParseRawInput returns an object
// or the message, and never panics.
func FuzzParseRawInput(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{a:'b',}`, `{"a":[1,{"b":`, `[`, `{'a\'`, `{"a":"\u12`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := toolkit.ParseRawInput(s)
		if (in == nil) == (err == nil) {
			t.Fatalf("ParseRawInput(%q) = %v, %v", s, in, err)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRawArgumentsKeepBigIntegers: an integer beyond float64's exact range
// (an id a model copies) reaches the tool whole, as Python's json.loads
// keeps it; it came as the nearest float64 (…993 as …992).
func TestRawArgumentsKeepBigIntegers(t *testing.T) {
	type getIn struct {
		ID    int64   `json:"id"`
		Ratio float64 `json:"ratio,omitempty"`
	}
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("get", "Get.", func(ctx context.Context, in getIn) (string, error) {
		return strconv.FormatInt(in.ID, 10) + " " + strconv.FormatFloat(in.Ratio, 'g', -1, 64), nil
	})); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{"id": 9007199254740993, "ratio": 0.5}`, `{id: 9007199254740993, ratio: 0.5,}`} {
		if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "get", RawInput: raw}); r.Text() != "9007199254740993 0.5" {
			t.Errorf("RawInput %s: %s %q", raw, r.State, r.Text())
		}
	}
	in, err := toolkit.ParseRawInput(`{"l": [-9223372036854775807, 12, 1e3], "big": 123456789012345678901234567890}`)
	if err != nil {
		t.Fatal(err)
	}
	if l := in["l"].([]any); l[0] != int64(-9223372036854775807) || l[1] != float64(12) || l[2] != float64(1000) {
		t.Errorf("l = %#v: want the big integer exact, the others float64 as before", l)
	}
	if _, ok := in["big"].(float64); !ok {
		t.Errorf("an integer beyond int64 = %#v, want float64", in["big"])
	}
}

// TestBigIntegerOutOfBoundsSaysItExact: a big integer the schema refuses
// is named in the message as the model sent it, not as the nearest
// float64 (-9007199254740993 came back as -9.007199254740992e+15).
func TestBigIntegerOutOfBoundsSaysItExact(t *testing.T) {
	type getIn struct {
		ID int64 `json:"id" minimum:"0"`
	}
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("get", "Get.", func(ctx context.Context, in getIn) (string, error) {
		return "", nil
	})); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "get", RawInput: `{"id": -9007199254740993}`})
	if want := "minimum: -9007199254740993 is less than 0"; !strings.Contains(r.Text(), want) {
		t.Errorf("%s %q, want it to say %q", r.Code, r.Text(), want)
	}
}

// TestBigIntegerTags: the default tag of an integer field keeps an
// integer beyond ±2^53 exact, in the schema the model sees and for the
// tool; an enum tag with one is refused at registration, since the input
// validator compares enums in float64 and would refuse the exact value.
func TestBigIntegerTags(t *testing.T) {
	type pickIn struct {
		ID  int64 `json:"id"`
		Max int64 `json:"max,omitempty" default:"9007199254740995"`
	}
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("pick", "Pick.", func(ctx context.Context, in pickIn) (string, error) {
		return strconv.FormatInt(in.ID, 10) + " " + strconv.FormatInt(in.Max, 10), nil
	})); err != nil {
		t.Fatal(err)
	}
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "pick", RawInput: `{"id": 9007199254740993}`}); r.Text() != "9007199254740993 9007199254740995" {
		t.Errorf("the default: %s %q", r.State, r.Text())
	}
	b, _ := json.Marshal(tk.Schemas(nil)[0].Function.Parameters)
	if !strings.Contains(string(b), `"default":9007199254740995`) {
		t.Errorf("the schema the model sees: %s", b)
	}
	type enumIn struct {
		ID int64 `json:"id" enum:"9007199254740993,1"`
	}
	err := tk.Add(toolkit.Func("pick2", "Pick.", func(ctx context.Context, in enumIn) (string, error) { return "", nil }))
	if err == nil || !strings.Contains(err.Error(), "9007199254740993 is beyond ±2^53") {
		t.Errorf("an enum tag beyond ±2^53: %v", err)
	}
}

// AgentScope cuts the arguments shown in ToolJSONDecodeError's snippet by
// characters (Python's len and slices): over 200 of them, the first 100,
// "[TRUNCATE]" and the last 100. Non-ASCII arguments are not cut sooner.
func TestRawArgumentsTruncatedByCharacters(t *testing.T) {
	short := "please echo " + strings.Repeat("数", 150) // 162 characters, 462 bytes
	_, err := toolkit.ParseRawInput(short)
	if err == nil || strings.Contains(err.Error(), "[TRUNCATE]") || !strings.Contains(err.Error(), "your_tool_arguments = '"+short+"'\n") {
		t.Errorf("162 characters were cut: %v", err)
	}
	long := "please echo " + strings.Repeat("数", 94) + strings.Repeat("字", 100) + strings.Repeat("文", 100) // 306 characters
	_, err = toolkit.ParseRawInput(long)
	want := "your_tool_arguments = 'please echo " + strings.Repeat("数", 88) + "[TRUNCATE]" + strings.Repeat("文", 100) + "'\n"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("306 characters: %v\nwant the snippet %q", err, want)
	}
}

// TestRawArgumentsKeepBigUnsignedIntegers: an integer past int64 that
// fits a uint64 (a hash, an unsigned id) reaches a uint64 field whole, as
// one within int64 does; it came as the nearest float64, written out as
// 9223372036854776000, so the tool got an id off by 191 and no error.
// One past uint64 is still refused by the field, not rounded.
func TestRawArgumentsKeepBigUnsignedIntegers(t *testing.T) {
	type getIn struct {
		ID   uint64   `json:"id"`
		More []uint64 `json:"more,omitempty"`
	}
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("get", "Get.", func(ctx context.Context, in getIn) (string, error) {
		return fmt.Sprint(in.ID, in.More), nil
	})); err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]string{
		`{"id": 9223372036854775809}`:                                    "9223372036854775809 []",
		`{"id": 1, "more": [18446744073709551615, 9223372036854775808]}`: "1 [18446744073709551615 9223372036854775808]",
	} {
		if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "get", RawInput: raw}); r.Text() != want {
			t.Errorf("RawInput %s: %s %q, want %q", raw, r.State, r.Text(), want)
		}
	}
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "get", RawInput: `{"id": 18446744073709551616}`}); r.Code != toolkit.CodeInvalidInput {
		t.Errorf("an id past uint64: %s %s %q, want invalid_input", r.State, r.Code, r.Text())
	}
	in, err := toolkit.ParseRawInput(`{"u": 18446744073709551615, "i": 9223372036854775807}`)
	if err != nil {
		t.Fatal(err)
	}
	if in["u"] != uint64(18446744073709551615) || in["i"] != int64(9223372036854775807) {
		t.Errorf("u = %#v, i = %#v: want uint64 and int64", in["u"], in["i"])
	}
	type defIn struct {
		ID uint64 `json:"id,omitempty" default:"18446744073709551615"`
	}
	if err := tk.Add(toolkit.Func("def", "Def.", func(ctx context.Context, in defIn) (string, error) { return fmt.Sprint(in.ID), nil })); err != nil {
		t.Fatal(err)
	}
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "def", RawInput: `{}`}); r.Text() != "18446744073709551615" {
		t.Errorf("the default: %s %q", r.State, r.Text())
	}
	type enumIn struct {
		ID uint64 `json:"id" enum:"18446744073709551615,1"`
	}
	err = tk.Add(toolkit.Func("enum", "Enum.", func(ctx context.Context, in enumIn) (string, error) { return "", nil }))
	if err == nil || !strings.Contains(err.Error(), "18446744073709551615 is beyond ±2^53") {
		t.Errorf("an enum tag past int64: %v", err)
	}
}
