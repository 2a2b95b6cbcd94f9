package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

func toolNames(tk *toolkit.Toolkit) []string {
	var names []string
	for _, t := range tk.Tools() {
		names = append(names, t.Name+"@"+t.Group())
	}
	return names
}

func TestRegisterDefaults(t *testing.T) {
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	want := []string{"echo@basic", "sleep@basic", "view_text_file@basic", "write_text_file@basic", "insert_text_file@basic"}
	if got := toolNames(tk); !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if len(tk.Groups()) != 0 {
		t.Errorf("groups = %v, want none", tk.Groups())
	}
	flags := map[string]bool{}
	for _, tl := range tk.Tools() {
		flags[tl.Name] = tl.ReadOnly()
	}
	for name, ro := range map[string]bool{"echo": true, "sleep": true, "view_text_file": true, "write_text_file": false, "insert_text_file": false} {
		if flags[name] != ro {
			t.Errorf("%s read-only = %v, want %v", name, flags[name], ro)
		}
	}
}

func TestRegisterAll(t *testing.T) {
	tk := toolkit.New(nil)
	ws := filepath.Join(t.TempDir(), "created", "ws")
	if err := builtin.Register(tk, builtin.Config{Workspace: ws, Tools: allTools()}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		t.Fatalf("workspace not created: %v", err)
	}
	want := []string{"echo@basic", "sleep@basic", "view_text_file@basic", "write_text_file@basic", "insert_text_file@basic",
		"execute_shell_command@exec", "execute_python_code@exec"}
	if got := toolNames(tk); !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	groups := tk.Groups()
	if len(groups) != 1 || groups[0].Name != builtin.ExecGroup || groups[0].Active {
		t.Errorf("groups = %+v, want one inactive exec group", groups)
	}
	schema, _ := tk.Schema(builtin.ExecuteShellCommand)
	timeout := schema.Function.Parameters["properties"].(map[string]any)["timeout"].(map[string]any)
	if timeout["default"] != 300.0 || timeout["maximum"] != 3600.0 {
		t.Errorf("timeout schema = %v", timeout)
	}
	if req := schema.Function.Parameters["required"]; !slices.Equal(anyStrings(req), []string{"command"}) {
		t.Errorf("required = %v, want [command]", req)
	}
}

func anyStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, s := range x {
			out = append(out, s.(string))
		}
	case []string:
		out = x
	}
	return out
}

// Tools can go in groups the operator declared, including an exec group
// worded differently or active by default.
func TestRegisterGroups(t *testing.T) {
	tk := toolkit.New(nil)
	for _, g := range []toolkit.Group{
		{Name: "files", Description: "File tools."},
		{Name: builtin.ExecGroup, Description: "My exec group.", Active: true},
	} {
		if err := tk.AddGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	err := builtin.Register(tk, builtin.Config{Workspace: t.TempDir(), Tools: []builtin.Tool{
		{Name: builtin.Echo},
		{Name: builtin.WriteTextFile, Group: "files"},
		{Name: builtin.ExecuteShellCommand},
		{Name: builtin.ExecutePythonCode, Group: toolkit.BasicGroup},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"echo@basic", "write_text_file@files", "execute_shell_command@exec", "execute_python_code@basic"}
	if got := toolNames(tk); !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if g := tk.Groups()[1]; g.Description != "My exec group." || !g.Active {
		t.Errorf("the declared exec group was replaced: %+v", g)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: builtin.ExecuteShellCommand, Input: map[string]any{"command": "echo on"}})
	if got := wantOK(t, r); got != "on\n<returncode>0</returncode>" {
		t.Errorf("got %q", got)
	}
}

func TestRegisterErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "")
	tests := []struct {
		name string
		cfg  builtin.Config
		frag string
	}{
		{"unknown tool", builtin.Config{Workspace: t.TempDir(), Tools: []builtin.Tool{{Name: "rm_rf"}}}, `unknown built-in tool "rm_rf"`},
		{"tool twice", builtin.Config{Tools: []builtin.Tool{{Name: "echo"}, {Name: "echo"}}}, `"echo" listed twice`},
		{"unknown group", builtin.Config{Workspace: t.TempDir(), Tools: []builtin.Tool{{Name: "echo"}, {Name: "view_text_file", Group: "nope"}}}, `group "nope" not found`},
		{"no workspace", builtin.Config{Tools: []builtin.Tool{{Name: "view_text_file"}}}, "no workspace directory"},
		{"workspace is a file", builtin.Config{Workspace: file}, "creating workspace"},
		{"negative timeout", builtin.Config{Workspace: t.TempDir(), DefaultTimeout: -time.Second}, "negative default timeout"},
		{"negative max timeout", builtin.Config{Workspace: t.TempDir(), MaxTimeout: -time.Second}, "negative max timeout"},
		{"negative output", builtin.Config{Workspace: t.TempDir(), MaxOutputBytes: -1}, "negative max output"},
		{"negative file size", builtin.Config{Workspace: t.TempDir(), MaxFileBytes: -1}, "negative max file"},
		{"negative session workspaces", builtin.Config{Workspace: t.TempDir(), PerSessionWorkspace: true, MaxSessionWorkspaces: -2}, "max session workspaces -2"},
		{"default above max", builtin.Config{Workspace: t.TempDir(), DefaultTimeout: time.Hour, MaxTimeout: time.Minute}, "above the max timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := toolkit.New(nil)
			err := builtin.Register(tk, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.frag) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.frag)
			}
			if len(tk.Tools()) != 0 || len(tk.Groups()) != 0 {
				t.Errorf("a failed Register left tools %v and groups %v", toolNames(tk), tk.Groups())
			}
		})
	}
}

// A name clash half-way leaves the toolkit as it was.
func TestRegisterRollsBack(t *testing.T) {
	tk := toolkit.New(nil)
	mine := toolkit.Func("execute_python_code", "Mine.", func(context.Context, struct{}) (string, error) { return "mine", nil })
	if err := tk.Add(mine); err != nil {
		t.Fatal(err)
	}
	err := builtin.Register(tk, builtin.Config{Workspace: t.TempDir(), Tools: allTools()})
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("err = %v, want a name clash", err)
	}
	if got := toolNames(tk); !slices.Equal(got, []string{"execute_python_code@basic"}) {
		t.Errorf("tools after the failed Register = %v", got)
	}
	if len(tk.Groups()) != 0 {
		t.Errorf("groups after the failed Register = %v", tk.Groups())
	}
}

func TestEcho(t *testing.T) {
	tk, _ := kit(t, builtin.Config{Tools: []builtin.Tool{{Name: builtin.Echo}}})
	if got := wantOK(t, invoke(t, tk, builtin.Echo, map[string]any{"text": "hi ✓"})); got != "hi ✓" {
		t.Errorf("got %q", got)
	}
	wantCode(t, invoke(t, tk, builtin.Echo, map[string]any{}), toolkit.CodeInvalidInput, "text")
	wantCode(t, invoke(t, tk, builtin.Echo, map[string]any{"text": 1}), toolkit.CodeInvalidInput, "text")
}

func TestSleep(t *testing.T) {
	tk, _ := kit(t, builtin.Config{Tools: []builtin.Tool{{Name: builtin.Sleep}}, MaxTimeout: time.Minute})
	t.Run("short", func(t *testing.T) {
		if got := wantOK(t, invoke(t, tk, builtin.Sleep, map[string]any{"seconds": 0.01})); got != "Slept for 0.01 seconds." {
			t.Errorf("got %q", got)
		}
	})
	t.Run("progress every second", func(t *testing.T) {
		var progress []toolkit.Progress
		var final *toolkit.Response
		for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "p", Name: builtin.Sleep, Input: map[string]any{"seconds": 1.5}}) {
			if ev.Progress != nil {
				progress = append(progress, *ev.Progress)
			}
			if ev.Final != nil {
				final = ev.Final
			}
		}
		wantOK(t, final)
		if len(progress) == 0 || progress[0].Total != 1.5 || progress[0].Progress < 1 {
			t.Errorf("progress = %+v, want reports of 1.5 seconds", progress)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: "c", Name: builtin.Sleep, Input: map[string]any{"seconds": 59}})
		wantCode(t, r, toolkit.CodeInterrupted, toolkit.InterruptedText)
	})
	for name, secs := range map[string]any{"negative": -1, "too long": 61, "not a number": "10"} {
		t.Run(name, func(t *testing.T) {
			wantCode(t, invoke(t, tk, builtin.Sleep, map[string]any{"seconds": secs}), toolkit.CodeInvalidInput, "seconds")
		})
	}
}
