package toolkit_test

// AgentScope's own test cases, ported where the behaviour is ours too. Each
// test names its original.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// Port of toolkit_test.py::ToolkitTest::test_tool (2.x).
func TestTool(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAdd(t, tk, writes("tool_1", nil, chunkOf(textBlock("x", "Hello"))))
	mustAdd(t, tk, writes("tool_2", nil,
		chunkOf(textBlock("a", "123")),
		chunkOf(textBlock("b", "456")),
		chunkOf(textBlock("b", "789")),
		chunkOf(dataBlock("1", "image/png", "abc")),
		chunkOf(dataBlock("2", "image/png", "***")),
		chunkOf(dataBlock("1", "image/png", "def")),
	))

	// A non-streaming tool: one running chunk, then the success response.
	r := collect(t, tk, ctx, toolkit.ToolCall{ID: "test_1", Name: "tool_1"})
	if len(r.chunks) != 1 || r.chunks[0].State != toolkit.StateRunning {
		t.Fatalf("chunks = %+v, want one running chunk", r.chunks)
	}
	jsonEqual(t, "tool_1 final", r.final, &toolkit.Response{
		ID: "test_1", State: toolkit.StateSuccess, Content: []toolkit.Block{textBlock("x", "Hello")},
	})

	// A streaming tool: six chunks, forwarded as written, then the
	// accumulation (text by id, data by id, consecutive text merged).
	r = collect(t, tk, ctx, toolkit.ToolCall{ID: "test_2", Name: "tool_2"})
	if len(r.chunks) != 6 {
		t.Fatalf("got %d chunks, want 6", len(r.chunks))
	}
	for i, c := range r.chunks {
		if c.State != toolkit.StateRunning {
			t.Errorf("chunk %d state = %q, want running", i, c.State)
		}
	}
	jsonEqual(t, "tool_2 final", r.final, &toolkit.Response{
		ID:    "test_2",
		State: toolkit.StateSuccess,
		Content: []toolkit.Block{
			textBlock("a", "123456789"),
			dataBlock("1", "image/png", "abcdef"),
			dataBlock("2", "image/png", "***"),
		},
	})
}

// Port of toolkit_test.py::ToolkitTest::test_tool_response_merges_base64_chunks_by_bytes.
func TestToolResponseMergesBase64ChunksByBytes(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	tk := newToolkit(t, nil)
	mustAdd(t, tk, writes("audio", nil,
		chunkOf(dataBlock("d", "audio/wav", b64([]byte("hello")))),
		chunkOf(dataBlock("d", "audio/wav", b64([]byte("world")))),
	))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "c", Name: "audio"})
	if len(r.final.Content) != 1 {
		t.Fatalf("content = %+v, want one data block", r.final.Content)
	}
	got, err := base64.StdEncoding.DecodeString(r.final.Content[0].Data)
	if err != nil {
		t.Fatalf("merged data is not base64: %v", err)
	}
	if string(got) != "helloworld" {
		t.Errorf("merged bytes = %q, want helloworld", got)
	}
}

type addIn struct {
	A int `json:"a" jsonschema:"The first number."`
	B int `json:"b" jsonschema:"The second number."`
}

type weatherIn struct {
	City string `json:"city" jsonschema:"The city."`
}

type modeIn struct {
	Mode  string `json:"mode" enum:"fast,slow" jsonschema:"How to run."`
	Level int    `json:"level,omitempty" minimum:"1" maximum:"10" default:"5" jsonschema:"How hard to try."`
}

// Ports of toolkit_test.py::RegisterFunctionTest (2.x): typed functions
// become tools, plain return values become text, schemas are inferred or
// taken as given.
func TestRegisterFunction(t *testing.T) {
	enumSchema := objectSchema(map[string]any{
		"unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}, "description": "The unit."},
	}, "unit")
	tests := []struct {
		name       string // the original test
		tool       *toolkit.Tool
		input      map[string]any
		wantSchema map[string]any // nil: not checked
		wantChunks []string
		wantText   string
	}{
		{
			name: "test_sync_non_streaming_function",
			tool: toolkit.Func("add", "Add two numbers.", func(ctx context.Context, in addIn) (string, error) {
				return fmt.Sprintf("Result: %d", in.A+in.B), nil
			}),
			input: map[string]any{"a": 3.0, "b": 5.0},
			wantSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"a": map[string]any{"type": "integer", "description": "The first number."},
					"b": map[string]any{"type": "integer", "description": "The second number."},
				},
				"required":             []any{"a", "b"},
				"additionalProperties": false,
			},
			wantChunks: []string{"Result: 8"},
			wantText:   "Result: 8",
		},
		{
			name: "test_sync_function_returning_plain_string",
			tool: toolkit.Func("greet", "Greet.", func(ctx context.Context, in struct{}) (string, error) {
				return "hello <world> & you", nil
			}),
			wantChunks: []string{"hello <world> & you"},
			wantText:   "hello <world> & you",
		},
		{
			name: "test_async_function_returning_json_serializable_value",
			tool: toolkit.Func("weather", "Weather.", func(ctx context.Context, in weatherIn) (map[string]any, error) {
				return map[string]any{"city": in.City, "temperature": 25, "note": "<sunny>"}, nil
			}),
			input:      map[string]any{"city": "成都"},
			wantChunks: []string{`{"city": "成都", "note": "<sunny>", "temperature": 25}`},
			wantText:   `{"city": "成都", "note": "<sunny>", "temperature": 25}`,
		},
		{
			name: "test_sync_streaming_function",
			tool: toolkit.Stream("count", "Count.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
				for _, s := range []string{"1", "2", "3"} {
					if err := w.Write(toolkit.Text(s)); err != nil {
						return err
					}
				}
				return nil
			}),
			wantChunks: []string{"1", "2", "3"},
			wantText:   "123",
		},
		{
			name: "test_sync_streaming_function_returning_plain_values",
			tool: toolkit.Stream("check", "Check.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
				for _, v := range []any{"checking", map[string]any{"status": "ok", "where": "成都"}} {
					c, err := toolkit.ValueChunk(v)
					if err != nil {
						return err
					}
					if err := w.Write(c); err != nil {
						return err
					}
				}
				return nil
			}),
			wantChunks: []string{"checking", `{"status": "ok", "where": "成都"}`},
			wantText:   `checking{"status": "ok", "where": "成都"}`,
		},
		{
			name: "test_custom_input_schema",
			tool: toolkit.Raw("convert", "Convert.", enumSchema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return w.Write(toolkit.Text("unit=" + call.Input["unit"].(string)))
			}),
			input:      map[string]any{"unit": "celsius"},
			wantSchema: enumSchema,
			wantChunks: []string{"unit=celsius"},
			wantText:   "unit=celsius",
		},
		{
			name: "test_base_model_input_schema",
			tool: toolkit.Func("run", "Run.", func(ctx context.Context, in modeIn) (string, error) {
				return fmt.Sprintf("%s/%d", in.Mode, in.Level), nil
			}),
			input: map[string]any{"mode": "fast"},
			wantSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"mode":  map[string]any{"type": "string", "enum": []any{"fast", "slow"}, "description": "How to run."},
					"level": map[string]any{"type": "integer", "minimum": 1, "maximum": 10, "default": 5, "description": "How hard to try."},
				},
				"required":             []any{"mode"},
				"additionalProperties": false,
			},
			wantChunks: []string{"fast/5"}, // the default reaches the tool
			wantText:   "fast/5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			mustAdd(t, tk, tt.tool)
			if tt.wantSchema != nil {
				s, ok := tk.Schema(tt.tool.Name)
				if !ok {
					t.Fatalf("Schema(%s) not found", tt.tool.Name)
				}
				jsonEqual(t, "parameters", s.Function.Parameters, tt.wantSchema)
				if s.Type != "function" || s.Function.Name != tt.tool.Name || s.Function.Description != tt.tool.Description {
					t.Errorf("schema envelope = %+v", s)
				}
			}
			r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "id", Name: tt.tool.Name, Input: tt.input})
			if r.final.State != toolkit.StateSuccess {
				t.Fatalf("final = %+v, want success", r.final)
			}
			var got []string
			for _, c := range r.chunks {
				if c.State != toolkit.StateRunning {
					t.Errorf("chunk state = %q, want running", c.State)
				}
				got = append(got, c.Content[0].Text)
			}
			if !slices.Equal(got, tt.wantChunks) {
				t.Errorf("chunks = %q, want %q", got, tt.wantChunks)
			}
			if r.final.Text() != tt.wantText {
				t.Errorf("final text = %q, want %q", r.final.Text(), tt.wantText)
			}
		})
	}
}

// Port of toolkit_test.py::ToolGroupTest::test_meta_tool (2.x), with the
// schema showing the current activation (agentscope #2413,
// agentscope-java #210) and the 2.x main checks on bad input.
func TestMetaTool(t *testing.T) {
	ctx := context.Background()

	// No groups: no meta tool.
	tk := newToolkit(t, nil)
	if got := tk.Schemas(nil); len(got) != 0 {
		t.Fatalf("Schemas of an empty toolkit = %+v, want none", got)
	}
	if r := collect(t, tk, ctx, toolkit.ToolCall{ID: "m", Name: toolkit.MetaToolName}); r.final.Code != toolkit.CodeNotFound {
		t.Errorf("reset_tools without groups: code %q, want not_found", r.final.Code)
	}

	// The description is 2.x's, word for word (the schema adds the current
	// activation after it).
	const want2x = "This tool allows you to reset your equipped tools based on your " +
		"current task requirements. These tools are organized into " +
		"different groups, and you can activate/deactivate them " +
		"by specifying the boolean values for each group in the input.\n\n" +
		"**Important: The input booleans are the final state of their " +
		"corresponding tool groups, not incremental changes.** Any " +
		"group not explicitly set to True will be deactivated, " +
		"regardless of its previous state.\n\n" +
		"**Best practice**: Actively manage your tool groups——activate " +
		"only what you need for the current task, and promptly " +
		"deactivate groups as soon as they are no longer needed to" +
		" conserve context space.\n\n" +
		"This tool will return the usage instructions for the activated " +
		"tool groups, which you **MUST pay attention to and follow**. " +
		"You can also reuse this tool to re-check the instructions."
	if toolkit.MetaToolDescription != want2x {
		t.Errorf("MetaToolDescription = %q\nwant %q", toolkit.MetaToolDescription, want2x)
	}

	// One group: the meta tool is exposed with every group.
	tk = newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "group_1", Description: "Group 1"})
	jsonEqual(t, "schemas with one group", tk.Schemas(nil), []toolkit.FunctionSchema{{
		Type: "function",
		Function: toolkit.Function{
			Name:        toolkit.MetaToolName,
			Description: toolkit.MetaToolDescription + "\n\nCurrently active groups: none.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"group_1": map[string]any{"type": "boolean", "default": false, "description": "Group 1 (currently inactive)"},
			}},
		},
	}})

	// Name conflict.
	if err := tk.AddGroup(toolkit.Group{Name: "group_1", Description: "Group 1 again"}); err == nil {
		t.Error("a duplicate group name was accepted")
	}

	// Two groups, tools in the second, instructions on the second.
	tk = newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "group_1", Description: "Group 1"})
	mustAddGroup(t, tk, toolkit.Group{Name: "group_2", Description: "Group 2", Instructions: "This is group 2."})
	mustAdd(t, tk, writes("tool_1", nil, toolkit.Text("one")), toolkit.InGroup("group_2"))
	mustAdd(t, tk, writes("tool_2", nil, toolkit.Text("two")), toolkit.InGroup("group_2"))
	if names := schemaNames(tk.Schemas(nil)); !slices.Equal(names, []string{"reset_tools"}) {
		t.Errorf("schemas with nothing active = %v, want only reset_tools", names)
	}

	const head = "\n<tool-instructions>\nThe tool instructions are a collection of suggestions, rules and notifications about how to use the tools in the activated groups.\n"
	steps := []struct {
		name       string
		input      map[string]any
		wantState  toolkit.State
		wantCode   toolkit.Code
		wantText   string
		wantActive []string
	}{
		{
			name:       "activate one group",
			input:      map[string]any{"group_2": true},
			wantState:  toolkit.StateSuccess,
			wantText:   "The currently activated tool group(s): group_2." + head + `<group name="group_2">This is group 2.</group>` + "\n</tool-instructions>",
			wantActive: []string{"group_2"},
		},
		{
			name:       "activate both, listed in group order whatever the input order",
			input:      map[string]any{"group_2": true, "group_1": true},
			wantState:  toolkit.StateSuccess,
			wantText:   "The currently activated tool group(s): group_1, group_2." + head + `<group name="group_2">This is group 2.</group>` + "\n</tool-instructions>",
			wantActive: []string{"group_1", "group_2"},
		},
		{
			name:       "unknown group names change nothing",
			input:      map[string]any{"group_1": false, "nope": true, "also_nope": true},
			wantState:  toolkit.StateError,
			wantCode:   toolkit.CodeInvalidInput,
			wantText:   "Invalid group name(s): also_nope, nope. The current available groups are: group_1, group_2",
			wantActive: []string{"group_1", "group_2"},
		},
		{
			name:      "a non-boolean value changes nothing",
			input:     map[string]any{"group_1": "yes"},
			wantState: toolkit.StateError,
			wantCode:  toolkit.CodeInvalidInput,
			// AgentScope names Python's type (<class 'str'>); toolbus names
			// the one json.loads gives the same value (it said Go's before).
			wantText:   "Invalid arguments: the argument 'group_1' should be a bool value, but got <class 'str'>.",
			wantActive: []string{"group_1", "group_2"},
		},
		{
			name:       "absolute semantics: activating one deactivates the other",
			input:      map[string]any{"group_1": true},
			wantState:  toolkit.StateSuccess,
			wantText:   "The currently activated tool group(s): group_1.",
			wantActive: []string{"group_1"},
		},
		{
			name:       "explicit false",
			input:      map[string]any{"group_1": false, "group_2": true},
			wantState:  toolkit.StateSuccess,
			wantText:   "The currently activated tool group(s): group_2." + head + `<group name="group_2">This is group 2.</group>` + "\n</tool-instructions>",
			wantActive: []string{"group_2"},
		},
		{
			name:       "{} deactivates all",
			input:      map[string]any{},
			wantState:  toolkit.StateSuccess,
			wantText:   "All tool groups are currently deactivated.",
			wantActive: []string{},
		},
	}
	for _, st := range steps {
		r := collect(t, tk, ctx, toolkit.ToolCall{ID: "xxx", Name: toolkit.MetaToolName, Input: st.input, Session: "s1"})
		if r.final.State != st.wantState || r.final.Code != st.wantCode || r.final.Text() != st.wantText {
			t.Errorf("%s: final = %s/%q %q\nwant %s/%q %q", st.name, r.final.State, r.final.Code, r.final.Text(), st.wantState, st.wantCode, st.wantText)
		}
		active, _, err := tk.ActiveGroups(ctx, "s1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(active, st.wantActive) && !(len(active) == 0 && len(st.wantActive) == 0) {
			t.Errorf("%s: active groups = %v, want %v", st.name, active, st.wantActive)
		}
		if st.wantState == toolkit.StateSuccess {
			jsonEqual(t, st.name+": metadata active_groups", r.final.Metadata[toolkit.MetaActiveGroups], st.wantActive)
		}
	}
	// Another session is unaffected.
	if active, _, _ := tk.ActiveGroups(ctx, "s2", 0); len(active) != 0 {
		t.Errorf("session s2 active = %v, want none", active)
	}
}

func schemaNames(s []toolkit.FunctionSchema) []string {
	var out []string
	for _, f := range s {
		out = append(out, f.Function.Name)
	}
	return out
}

// Port of toolkit_test.py::ToolGroupTest::test_check_tool_available_distinguishes_inactive_group.
func TestCheckToolAvailable(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "repair", Description: "Repair tools."})
	mustAdd(t, tk, writes("fix", nil, toolkit.Text("fixed")), toolkit.InGroup("repair"))

	r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "fix", Session: "s"})
	want := "ToolGroupInactiveError: The tool 'fix' in group 'repair' is currently inactive. You should first activate the group by calling the 'reset_tools' tool."
	if r.final.Code != toolkit.CodeGroupInactive || r.final.State != toolkit.StateError || r.final.Text() != want {
		t.Errorf("inactive: %s/%s %q", r.final.State, r.final.Code, r.final.Text())
	}
	if collect(t, tk, ctx, toolkit.ToolCall{ID: "2", Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"repair": true}}).final.State != toolkit.StateSuccess {
		t.Fatal("reset_tools failed")
	}
	if r := collect(t, tk, ctx, toolkit.ToolCall{ID: "3", Name: "fix", Session: "s"}); r.final.State != toolkit.StateSuccess || r.final.Text() != "fixed" {
		t.Errorf("active: %+v", r.final)
	}
	r = collect(t, tk, ctx, toolkit.ToolCall{ID: "4", Name: "nope", Session: "s"})
	if r.final.Code != toolkit.CodeNotFound || r.final.Text() != "ToolNotFoundError: The tool named 'nope' doesn't exist." {
		t.Errorf("unknown: %s %q", r.final.Code, r.final.Text())
	}
}

// Ports of toolkit_test.py::RemoveTitleFieldTest.
func TestStripTitles(t *testing.T) {
	tests := []struct {
		name   string // the original test
		schema map[string]any
		want   map[string]any
	}{
		{
			name:   "test_removes_top_level_title",
			schema: map[string]any{"title": "Root", "type": "object", "properties": map[string]any{}},
			want:   map[string]any{"type": "object", "properties": map[string]any{}},
		},
		{
			name:   "test_removes_property_titles",
			schema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"title": "Name", "type": "string"}}},
			want:   map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		},
		{
			name: "test_removes_defs_titles",
			schema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/MyModel"}},
				"$defs": map[string]any{"MyModel": map[string]any{
					"title": "MyModel", "type": "object",
					"properties": map[string]any{"val": map[string]any{"title": "Val", "type": "string"}},
				}},
			},
			want: map[string]any{
				"type":       "object",
				"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/MyModel"}},
				"$defs": map[string]any{"MyModel": map[string]any{
					"type":       "object",
					"properties": map[string]any{"val": map[string]any{"type": "string"}},
				}},
			},
		},
		{
			name:   "test_does_not_mutate_non_dict_defs",
			schema: map[string]any{"type": "object", "properties": map[string]any{}, "$defs": map[string]any{"AlwaysTrue": true}},
			want:   map[string]any{"type": "object", "properties": map[string]any{}, "$defs": map[string]any{"AlwaysTrue": true}},
		},
		{
			name: "nested items, anyOf and additionalProperties; a property named title is kept",
			schema: map[string]any{"type": "object", "title": "T", "properties": map[string]any{
				"title": map[string]any{"type": "string", "title": "Title"},
				"list":  map[string]any{"type": "array", "title": "L", "items": map[string]any{"title": "I", "type": "string"}},
				"maybe": map[string]any{"anyOf": []any{map[string]any{"title": "A", "type": "string"}, map[string]any{"type": "null"}}},
				"dict":  map[string]any{"type": "object", "additionalProperties": map[string]any{"title": "V", "type": "integer"}},
			}},
			want: map[string]any{"type": "object", "properties": map[string]any{
				"title": map[string]any{"type": "string"},
				"list":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"maybe": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}},
				"dict":  map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toolkit.StripTitles(tt.schema)
			if !reflect.DeepEqual(tt.schema, tt.want) {
				t.Errorf("got %v\nwant %v", tt.schema, tt.want)
			}
		})
	}
	// Titles in a raw schema never reach the model.
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("titled", "T.", map[string]any{"type": "object", "title": "X", "properties": map[string]any{"a": map[string]any{"title": "A", "type": "string"}}}, nopHandler))
	s, _ := tk.Schema("titled")
	jsonEqual(t, "raw schema", s.Function.Parameters, map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}})
}

func nopHandler(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil }

// Port of toolkit_basic_test.py::ToolkitBasicTest::test_duplicate_tool_registration,
// step 4 and test_func_name_parameter's rename: a namesake registered with
// "rename" gets the name name_XXXXX (after the others), keeps its original
// name, and both tools work.
func TestNamesakeRenameRegistersBothTools(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAdd(t, tk, writes("sync_func", nil, toolkit.Text("first")))
	second := toolkit.Raw("sync_func", "The second.", objectSchema(nil),
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text("second"))
		})
	for range 2 {
		if err := tk.Add(second, toolkit.OnConflict(toolkit.ConflictRename)); err != nil {
			t.Fatal(err)
		}
	}
	names := schemaNames(tk.Schemas(nil))
	re := regexp.MustCompile(`^sync_func_[23456789A-HJ-NP-Za-km-z]{5}$`)
	if len(names) != 3 || names[0] != "sync_func" || !re.MatchString(names[1]) || !re.MatchString(names[2]) || names[1] == names[2] {
		t.Fatalf("names = %v", names)
	}
	if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "sync_func"}).Text(); got != "first" {
		t.Errorf("sync_func = %q", got)
	}
	renamed, _ := tk.Get(names[1])
	if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "2", Name: names[1]}).Text(); got != "second" || renamed.OriginalName() != "sync_func" {
		t.Errorf("%s = %q, original name %q", names[1], got, renamed.OriginalName())
	}
	if s, _ := tk.Schema(names[1]); s.Function.Name != names[1] || s.Function.Description != "The second." {
		t.Errorf("schema %+v", s.Function)
	}
	if first, _ := tk.Get("sync_func"); first.OriginalName() != "sync_func" {
		t.Errorf("the first tool's original name %q", first.OriginalName())
	}
}

// Port of toolkit_basic_test.py::ToolkitBasicTest::test_duplicate_tool_registration
// (1.x namesake strategies; rename: TestNamesakeRenameRegistersBothTools).
func TestNamesake(t *testing.T) {
	ctx := context.Background()
	first := writes("sync_func", nil, toolkit.Text("first"))
	second := toolkit.Raw("sync_func", "The second.", objectSchema(map[string]any{"x": map[string]any{"type": "string"}}),
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text("second"))
		})
	tests := []struct {
		name       string
		opts       []toolkit.Option
		wantErr    bool
		wantText   string
		wantSchema string // description of sync_func after the second Add
	}{
		{name: "raise (default)", wantErr: true, wantText: "first", wantSchema: "Writes fixed chunks."},
		{name: "explicit error", opts: []toolkit.Option{toolkit.OnConflict(toolkit.ConflictError)}, wantErr: true, wantText: "first", wantSchema: "Writes fixed chunks."},
		{name: "skip", opts: []toolkit.Option{toolkit.OnConflict(toolkit.ConflictSkip)}, wantText: "first", wantSchema: "Writes fixed chunks."},
		{name: "override keeps the position", opts: []toolkit.Option{toolkit.OnConflict(toolkit.ConflictOverride)}, wantText: "second", wantSchema: "The second."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			mustAdd(t, tk, writes("before", nil))
			mustAdd(t, tk, first)
			mustAdd(t, tk, writes("after", nil))
			err := tk.Add(second, tt.opts...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Add = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), `"sync_func" is already registered`) {
				t.Errorf("error %q does not name the tool", err)
			}
			if names := schemaNames(tk.Schemas(nil)); !slices.Equal(names, []string{"before", "sync_func", "after"}) {
				t.Errorf("order = %v", names)
			}
			s, _ := tk.Schema("sync_func")
			if s.Function.Description != tt.wantSchema {
				t.Errorf("description = %q, want %q", s.Function.Description, tt.wantSchema)
			}
			if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "sync_func"}).Text(); got != tt.wantText {
				t.Errorf("call = %q, want %q", got, tt.wantText)
			}
		})
	}
}

type presetIn struct {
	Arg1 int    `json:"arg1"`
	Arg2 []int  `json:"arg2"`
	Key  string `json:"api_key"`
}

// Ports of toolkit_basic_test.py::ToolkitBasicTest::test_basic_functionalities
// (preset part), test_register_with_valid_json_schema and
// test_register_with_json_schema_preset_kwargs_keep_other_required, with
// presets authoritative (deliberately unlike 1.x, where the model's input
// won).
func TestPresets(t *testing.T) {
	ctx := context.Background()
	typed := toolkit.Func("sync_func", "F.", func(ctx context.Context, in presetIn) (string, error) {
		return fmt.Sprintf("arg1: %d, arg2: %v, key: %s", in.Arg1, in.Arg2, in.Key), nil
	})
	tests := []struct {
		name       string
		tool       *toolkit.Tool
		presets    map[string]any
		input      map[string]any
		wantParams map[string]any
		wantText   string
	}{
		{
			name: "hidden from the schema, required dropped when empty",
			tool: toolkit.Func("f", "F.", func(ctx context.Context, in struct {
				Arg1 int `json:"arg1"`
			}) (string, error) {
				return fmt.Sprint(in.Arg1), nil
			}),
			presets: map[string]any{"arg1": 55},
			input:   map[string]any{},
			wantParams: map[string]any{
				"type": "object", "properties": map[string]any{}, "additionalProperties": false,
			},
			wantText: "55",
		},
		{
			name:    "other required fields are kept",
			tool:    typed,
			presets: map[string]any{"arg1": 55, "api_key": "secret"},
			input:   map[string]any{"arg2": []any{1.0, 2.0, 3.0}},
			wantParams: map[string]any{
				"type":                 "object",
				"properties":           map[string]any{"arg2": map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "integer"}}},
				"required":             []any{"arg2"},
				"additionalProperties": false,
			},
			wantText: "arg1: 55, arg2: [1 2 3], key: secret",
		},
		{
			name:     "presets win over the model's input",
			tool:     typed,
			presets:  map[string]any{"arg1": 55, "api_key": "secret"},
			input:    map[string]any{"arg1": 1.0, "arg2": []any{}, "api_key": "stolen"},
			wantText: "arg1: 55, arg2: [], key: secret",
		},
		{
			name:    "raw schema: required dropped when empty, even without presets touching it",
			tool:    toolkit.Raw("r", "R.", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "required": []any{}}, echoInput),
			presets: nil,
			input:   map[string]any{"a": "x"},
			wantParams: map[string]any{
				"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}},
			},
			wantText: `{"a": "x"}`,
		},
		{
			name:    "raw schema with []string required",
			tool:    toolkit.Raw("r", "R.", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}, "b": map[string]any{"type": "string"}}, "required": []string{"a", "b"}}, echoInput),
			presets: map[string]any{"a": "preset"},
			input:   map[string]any{"b": "model"},
			wantParams: map[string]any{
				"type": "object", "properties": map[string]any{"b": map[string]any{"type": "string"}}, "required": []any{"b"},
			},
			wantText: `{"a": "preset", "b": "model"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			var opts []toolkit.Option
			if tt.presets != nil {
				opts = append(opts, toolkit.WithPresets(tt.presets))
			}
			mustAdd(t, tk, tt.tool, opts...)
			if tt.wantParams != nil {
				s, _ := tk.Schema(tt.tool.Name)
				jsonEqual(t, "parameters", s.Function.Parameters, tt.wantParams)
			}
			input := maps2(tt.input)
			r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: tt.tool.Name, Input: tt.input})
			if r.final.State != toolkit.StateSuccess || r.final.Text() != tt.wantText {
				t.Errorf("final = %s %q (%s), want %q", r.final.State, r.final.Text(), r.final.Code, tt.wantText)
			}
			if !reflect.DeepEqual(input, tt.input) {
				t.Errorf("the caller's input was modified: %v", tt.input)
			}
		})
	}
	// The registered tool keeps its own copy of the presets.
	presets := map[string]any{"arg1": 55, "api_key": "k"}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, typed, toolkit.WithPresets(presets))
	presets["api_key"] = "changed"
	if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "sync_func", Input: map[string]any{"arg2": nil}}).Text(); got != "arg1: 55, arg2: [], key: k" {
		t.Errorf("after mutating the caller's map: %q", got)
	}
}

func maps2(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// echoInput writes the call's input as JSON.
func echoInput(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
	c, err := toolkit.ValueChunk(call.Input)
	if err != nil {
		return err
	}
	return w.Write(c)
}

// Port of toolkit_basic_test.py::ToolkitBasicTest::test_basic_functionalities
// (set_extended_model part): extended schemas add fields, the fields reach
// the tool, a conflict is an error and nil restores the schema.
func TestExtend(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("f", "F.", objectSchema(map[string]any{"arg1": map[string]any{"type": "integer"}, "secret": map[string]any{"type": "string"}}, "arg1"), echoInput),
		toolkit.WithPresets(map[string]any{"secret": "s"}))
	thinking := map[string]any{"thinking": map[string]any{"type": "string", "description": "Think first."}}
	if err := tk.Extend("f", thinking, "thinking"); err != nil {
		t.Fatal(err)
	}
	s, _ := tk.Schema("f")
	jsonEqual(t, "extended", s.Function.Parameters, objectSchema(map[string]any{
		"arg1":     map[string]any{"type": "integer"},
		"thinking": map[string]any{"type": "string", "description": "Think first."},
	}, "arg1", "thinking"))
	r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "f", Input: map[string]any{"arg1": 1.0, "thinking": "hmm"}})
	if r.final.Text() != `{"arg1": 1, "secret": "s", "thinking": "hmm"}` {
		t.Errorf("extended call = %s %q", r.final.State, r.final.Text())
	}
	r = collect(t, tk, ctx, toolkit.ToolCall{ID: "2", Name: "f", Input: map[string]any{"arg1": 1.0}})
	if r.final.Code != toolkit.CodeInvalidInput || !strings.Contains(r.final.Text(), "thinking") {
		t.Errorf("missing required extension field: %s %q", r.final.Code, r.final.Text())
	}

	bad := []struct {
		name  string
		tool  string
		props map[string]any
		req   []string
		want  string
	}{
		{"conflict with a property", "f", map[string]any{"arg1": map[string]any{"type": "string"}}, nil, `"arg1" already exists`},
		{"conflict with a hidden preset", "f", map[string]any{"secret": map[string]any{"type": "string"}}, nil, `"secret" already exists`},
		{"unknown tool", "nope", thinking, nil, `"nope" not found`},
		{"required field not among the properties", "f", thinking, []string{"other"}, `"other" is not among`},
		{"a property that is not a schema", "f", map[string]any{"thinking": "string"}, nil, "invalid input schema"},
		{"a property containing itself", "f", map[string]any{"thinking": selfSchema()}, nil, "contains itself"},
		{"a property nested too deep", "f", map[string]any{"thinking": deepSchema(toolkit.MaxSchemaDepth)}, nil, "nested deeper than"},
	}
	for _, b := range bad {
		err := tk.Extend(b.tool, b.props, b.req...)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: Extend = %v, want an error containing %q", b.name, err, b.want)
		}
	}
	// A failed Extend changes nothing.
	s2, _ := tk.Schema("f")
	jsonEqual(t, "after failed extends", s2.Function.Parameters, s.Function.Parameters)

	if err := tk.Extend("f", nil); err != nil {
		t.Fatal(err)
	}
	s, _ = tk.Schema("f")
	jsonEqual(t, "extension removed", s.Function.Parameters, objectSchema(map[string]any{"arg1": map[string]any{"type": "integer"}}, "arg1"))

	// The extension's titles are stripped too, as the tool's own are
	// (1.x strips them from the extended model's schema).
	titled := map[string]any{"plan": map[string]any{"title": "Plan", "type": "array", "items": map[string]any{"title": "Step", "type": "string"}}}
	if err := tk.Extend("f", titled); err != nil {
		t.Fatal(err)
	}
	s, _ = tk.Schema("f")
	jsonEqual(t, "extension with titles", s.Function.Parameters, objectSchema(map[string]any{
		"arg1": map[string]any{"type": "integer"},
		"plan": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}, "arg1"))
	if _, ok := titled["plan"].(map[string]any)["title"]; !ok {
		t.Error("Extend changed the caller's properties")
	}
}

// TestExtendedFieldsReachTypedTools: a typed tool, whose input struct does
// not have the fields Extend added, reads them with toolkit.Extended.
func TestExtendedFieldsReachTypedTools(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	thinking := map[string]any{"thinking": map[string]any{"type": "string", "description": "Think first."}}
	type typedIn struct {
		Query string `json:"query"`
	}
	mustAdd(t, tk, toolkit.Func("typed", "T.", func(ctx context.Context, in typedIn) (string, error) {
		return fmt.Sprintf("%s, thinking %v", in.Query, toolkit.Extended(ctx)["thinking"]), nil
	}))
	if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "t0", Name: "typed", Input: map[string]any{"query": "q"}}).Text(); got != "q, thinking <nil>" {
		t.Errorf("typed tool, not extended: %q", got)
	}
	if err := tk.Extend("typed", thinking, "thinking"); err != nil {
		t.Fatal(err)
	}
	if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "t1", Name: "typed", Input: map[string]any{"query": "q", "thinking": "hmm"}}).Text(); got != "q, thinking hmm" {
		t.Errorf("typed tool with an extension: %q", got)
	}

}

// Ports of tool_middleware_test.py (2.x tool-level onion) and
// toolkit_middleware_test.py::test_toolkit_middleware (1.x toolkit level).
func TestMiddleware(t *testing.T) {
	ctx := context.Background()
	type logger struct{ lines []string }
	tag := func(l *logger, name string) toolkit.Middleware {
		return func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				l.lines = append(l.lines, name+"-pre")
				err := next(ctx, call, w)
				l.lines = append(l.lines, name+"-post")
				return err
			}
		}
	}
	upper := func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return next(ctx, call, toolkit.WriterFuncs{
				Chunk: func(c toolkit.Chunk) error {
					for i := range c.Content {
						c.Content[i].Text = strings.ToUpper(c.Content[i].Text)
					}
					return w.Write(c)
				},
				Prog: w.Progress,
			})
		}
	}
	stream := toolkit.Stream("stream", "S.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for _, s := range []string{"a", "b", "c"} {
			if err := w.Write(toolkit.Text(s)); err != nil {
				return err
			}
		}
		return nil
	})

	t.Run("test_no_middleware_non_streaming", func(t *testing.T) {
		tk := newToolkit(t, nil)
		mustAdd(t, tk, writes("one", nil, toolkit.Text("x")))
		if r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "one"}); len(r.chunks) != 1 || r.final.Text() != "x" {
			t.Errorf("got %d chunks, %q", len(r.chunks), r.final.Text())
		}
	})
	t.Run("test_no_middleware_streaming", func(t *testing.T) {
		tk := newToolkit(t, nil)
		mustAdd(t, tk, stream)
		if r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "stream"}); r.chunkText() != "abc" || len(r.chunks) != 3 {
			t.Errorf("chunks %q", r.chunkText())
		}
	})
	t.Run("test_middleware_wraps_call_in_onion_order", func(t *testing.T) {
		l := &logger{}
		tk := newToolkit(t, nil)
		mustAdd(t, tk, stream, toolkit.WithMiddleware(tag(l, "outer"), tag(l, "inner")))
		collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "stream"})
		if want := []string{"outer-pre", "inner-pre", "inner-post", "outer-post"}; !slices.Equal(l.lines, want) {
			t.Errorf("order = %v, want %v", l.lines, want)
		}
	})
	t.Run("toolkit middleware is outside tool middleware", func(t *testing.T) {
		l := &logger{}
		tk := newToolkit(t, nil)
		tk.Use(tag(l, "tk1"))
		mustAdd(t, tk, stream, toolkit.WithMiddleware(tag(l, "tool")))
		tk.Use(tag(l, "tk2")) // applies to tools already registered too
		collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "stream"})
		if want := []string{"tk1-pre", "tk2-pre", "tool-pre", "tool-post", "tk2-post", "tk1-post"}; !slices.Equal(l.lines, want) {
			t.Errorf("order = %v, want %v", l.lines, want)
		}
	})
	t.Run("test_single_middleware / test_middleware_with_streaming_tool", func(t *testing.T) {
		l := &logger{}
		tk := newToolkit(t, nil)
		mustAdd(t, tk, stream, toolkit.WithMiddleware(tag(l, "mw")))
		r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "stream"})
		if len(r.chunks) != 3 || !slices.Equal(l.lines, []string{"mw-pre", "mw-post"}) {
			t.Errorf("chunks %d, log %v", len(r.chunks), l.lines)
		}
	})
	t.Run("test_middleware_can_rewrite_input_kwargs", func(t *testing.T) {
		inject := func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				in := maps2(call.Input)
				in["injected"] = "yes"
				call.Input = in
				return next(ctx, call, w)
			}
		}
		tk := newToolkit(t, nil)
		mustAdd(t, tk, toolkit.Raw("echo", "E.", nil, echoInput), toolkit.WithMiddleware(inject))
		if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "echo", Input: map[string]any{"a": "b"}}).Text(); got != `{"a": "b", "injected": "yes"}` {
			t.Errorf("tool saw %s", got)
		}
	})
	t.Run("test_middleware_can_transform_chunks", func(t *testing.T) {
		tk := newToolkit(t, nil)
		mustAdd(t, tk, stream, toolkit.WithMiddleware(upper))
		r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "stream"})
		if r.chunkText() != "ABC" || r.final.Text() != "ABC" {
			t.Errorf("chunks %q final %q", r.chunkText(), r.final.Text())
		}
	})
	t.Run("test_middleware_can_short_circuit", func(t *testing.T) {
		called := false
		tool := toolkit.Raw("never", "N.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			called = true
			return nil
		})
		short := func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return w.Write(toolkit.Text("short-circuited"))
			}
		}
		tk := newToolkit(t, nil)
		mustAdd(t, tk, tool, toolkit.WithMiddleware(short))
		r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "never"})
		if called || r.final.State != toolkit.StateSuccess || r.final.Text() != "short-circuited" {
			t.Errorf("called=%v final=%+v", called, r.final)
		}
	})
	t.Run("test_middleware_exception_propagates", func(t *testing.T) {
		boom := errors.New("ValueError: boom")
		fail := func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if err := next(ctx, call, w); err != nil {
					return err
				}
				return boom
			}
		}
		tk := newToolkit(t, nil)
		mustAdd(t, tk, stream, toolkit.WithMiddleware(fail))
		r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "stream"})
		if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeToolError || r.final.Text() != "abcValueError: boom" {
			t.Errorf("final = %s/%s %q", r.final.State, r.final.Code, r.final.Text())
		}
		if last := r.chunks[len(r.chunks)-1]; last.State != toolkit.StateError || last.Content[0].Text != "ValueError: boom" {
			t.Errorf("last chunk = %+v", last)
		}
	})
	t.Run("an *Error from middleware keeps its code", func(t *testing.T) {
		deny := func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return toolkit.NewError(toolkit.CodeDenied, "PermissionDenied: no.")
			}
		}
		tk := newToolkit(t, nil)
		mustAdd(t, tk, stream, toolkit.WithMiddleware(deny))
		r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "stream"})
		if r.final.State != toolkit.StateDenied || r.final.Code != toolkit.CodeDenied || r.final.Text() != "PermissionDenied: no." {
			t.Errorf("final = %+v", r.final)
		}
	})
	// Port of toolkit_middleware_test.py::test_toolkit_middleware: each
	// middleware rewrites the input on the way in and the output on the way
	// out; the result text shows the onion.
	t.Run("test_toolkit_middleware", func(t *testing.T) {
		wrap := func(n string) toolkit.Middleware {
			return func(next toolkit.Handler) toolkit.Handler {
				return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					in := maps2(call.Input)
					in["text"] = in["text"].(string) + "[pre" + n + "]"
					call.Input = in
					return next(ctx, call, toolkit.WriterFuncs{
						Chunk: func(c toolkit.Chunk) error {
							c.Content[0].Text += "[post" + n + "]"
							return w.Write(c)
						},
					})
				}
			}
		}
		tk := newToolkit(t, nil)
		tk.Use(wrap("1"), wrap("2"))
		mustAdd(t, tk, toolkit.Func("echo", "E.", func(ctx context.Context, in EchoIn) (string, error) { return in.Text, nil }))
		if got := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "echo", Input: map[string]any{"text": "[ori]"}}).Text(); got != "[ori][pre1][pre2][post2][post1]" {
			t.Errorf("got %q", got)
		}
	})
}

// TestActivatedInstructionsForTheSystemPrompt: 1.x get_activated_notes:
// the instructions of the session's active groups, in group order, each
// under "## About Tool Group '<name>'"; "" when none is active or none
// has instructions.
func TestActivatedInstructionsForTheSystemPrompt(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	for _, g := range []toolkit.Group{
		{Name: "browser", Description: "Browse.", Instructions: "Close tabs you opened."},
		{Name: "quiet", Description: "No notes."},
		{Name: "shell", Description: "Run commands.", Instructions: "Never run rm -rf."},
	} {
		if err := tk.AddGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := tk.Instructions(ctx, "s1", 0); err != nil || got != "" {
		t.Fatalf("nothing active: %q, %v", got, err)
	}
	r := tk.Invoke(ctx, toolkit.ToolCall{ID: "m", Name: toolkit.MetaToolName, Session: "s1",
		Input: map[string]any{"shell": true, "quiet": true, "browser": true}})
	if r.State != toolkit.StateSuccess {
		t.Fatalf("reset_tools: %s", r.Text())
	}
	want := "## About Tool Group 'browser'\nClose tabs you opened.\n## About Tool Group 'shell'\nNever run rm -rf."
	if got, err := tk.Instructions(ctx, "s1", 0); err != nil || got != want {
		t.Fatalf("instructions = %q, %v; want %q", got, err, want)
	}
	if got := toolkit.ActivatedInstructions(tk.Groups(), []string{"quiet"}); got != "" {
		t.Errorf("only a group without instructions active: %q", got)
	}
}

// TestSessionStateExportAndImport: 1.x state_dict / load_state_dict: a
// session's active groups come out as {"active_groups": [...]} and go
// back in; a state naming an unknown group is refused.
func TestSessionStateExportAndImport(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	for _, g := range []string{"a", "b", "c"} {
		if err := tk.AddGroup(toolkit.Group{Name: g, Description: g}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := tk.ExportState(ctx, "s1")
	if b, _ := json.Marshal(st); err != nil || string(b) != `{"active_groups":[]}` {
		t.Fatalf("fresh session: %s, %v", b, err)
	}
	if _, err := tk.ImportState(ctx, "s1", toolkit.SessionState{ActiveGroups: []string{"c", "a"}}); err != nil {
		t.Fatal(err)
	}
	st, err = tk.ExportState(ctx, "s1")
	if b, _ := json.Marshal(st); err != nil || string(b) != `{"active_groups":["a","c"]}` {
		t.Fatalf("after the import: %s, %v", b, err)
	}
	if _, err := tk.ImportState(ctx, "s1", toolkit.SessionState{ActiveGroups: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown group: %v", err)
	}
	if st, _ := tk.ExportState(ctx, "s1"); !slices.Equal(st.ActiveGroups, []string{"a", "c"}) {
		t.Fatalf("a refused import changed the state: %v", st)
	}
}
