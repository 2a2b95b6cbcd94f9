package toolkit_test

import (
	"context"
	"fmt"

	"github.com/toolbus/toolbus/toolkit"
)

type EchoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

func Example() {
	tk := toolkit.New(nil)
	err := tk.Add(toolkit.Func("echo", "Echo the text back.",
		func(ctx context.Context, in EchoIn) (string, error) { return in.Text, nil }),
		toolkit.ReadOnly())
	if err != nil {
		panic(err)
	}
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": "hi"}}) {
		switch {
		case ev.Chunk != nil:
			fmt.Println("chunk:", ev.Chunk.Content[0].Text)
		case ev.Final != nil:
			fmt.Println("final:", ev.Final.ID, ev.Final.State, ev.Final.Text())
		}
	}
	// Output:
	// chunk: hi
	// final: c1 success hi
}

func ExampleToolkit_Call_errors() {
	tk := toolkit.New(nil)
	_ = tk.Add(toolkit.Func("echo", "Echo the text back.",
		func(ctx context.Context, in EchoIn) (string, error) { return in.Text, nil }))
	for _, call := range []toolkit.ToolCall{
		{ID: "1", Name: "nope"},
		{ID: "2", Name: "echo", Input: map[string]any{"text": 42}},
	} {
		resp := tk.Invoke(context.Background(), call)
		fmt.Println(resp.State, resp.Code, resp.Text())
	}
	// Output:
	// error not_found ToolNotFoundError: The tool named 'nope' doesn't exist.
	// error invalid_input Input validation failed for tool 'echo': validating /properties/text: type: 42 has type "integer", want "string"
}

func ExampleToolkit_Schemas() {
	tk := toolkit.New(nil)
	_ = tk.Add(toolkit.Func("echo", "Echo the text back.",
		func(ctx context.Context, in EchoIn) (string, error) { return in.Text, nil }))
	for _, s := range tk.Schemas(nil) {
		fmt.Println(s.Function.Name, s.Function.Parameters["required"], s.Function.Parameters["properties"])
	}
	// Output:
	// echo [text] map[text:map[description:the text to echo type:string]]
}
