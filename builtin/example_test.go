package builtin_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

func Example() {
	ws, err := os.MkdirTemp("", "workspace")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(ws)

	tk := toolkit.New(nil)
	err = builtin.Register(tk, builtin.Config{
		Workspace: ws,
		Tools: []builtin.Tool{
			{Name: builtin.Echo},
			{Name: builtin.WriteTextFile},
			{Name: builtin.ExecuteShellCommand}, // in the exec group, inactive by default
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	call := func(name string, input map[string]any) {
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: name, Input: input, Session: "s"})
		if r.State != toolkit.StateSuccess {
			fmt.Println(name+":", r.State, r.Code)
			return
		}
		fmt.Printf("%s: %q\n", name, r.Text())
	}
	call("echo", map[string]any{"text": "hi"})
	call("write_text_file", map[string]any{"file_path": "../escape.txt", "content": "x"})
	call("execute_shell_command", map[string]any{"command": "echo hello"})
	// The session turns the exec group on (reset_tools answers with the
	// group's instructions).
	on := tk.Invoke(ctx, toolkit.ToolCall{ID: "2", Name: "reset_tools", Input: map[string]any{"exec": true}, Session: "s"})
	fmt.Println("reset_tools:", on.State)
	call("write_text_file", map[string]any{"file_path": "notes/a.txt", "content": "one\ntwo\n"})
	call("execute_shell_command", map[string]any{"command": "wc -l < notes/a.txt; exit 2"})
	// Output:
	// echo: "hi"
	// write_text_file: denied denied
	// execute_shell_command: error group_inactive
	// reset_tools: success
	// write_text_file: "Create and write notes/a.txt successfully."
	// execute_shell_command: "2\n<returncode>2</returncode>"
}
