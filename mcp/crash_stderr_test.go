package mcp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "crash" {
		os.Exit(crashServerMain())
	}
}

// crashServerMain is a go-sdk stdio server whose tool "crash" writes a
// last word to its stderr and exits with status 3 in the middle of the
// call; "echo" answers.
func crashServerMain() int {
	srv := sdk.NewServer(&sdk.Implementation{Name: "crash", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo text."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "crash", Description: "Die during the call."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ args) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "panic: the index is corrupt")
			os.Exit(3)
			return nil, nil, nil
		})
	_ = srv.Run(context.Background(), &sdk.StdioTransport{})
	return 0
}

// A stdio server that dies during a call ended it "the connection ...
// failed during the call of 'crash': calling "tools/call": EOF": nothing
// said the server had exited, nor why, though its stderr held the reason
// (a connect failure reports it). The call's error now says how the
// server ended and what it last wrote to its stderr; the next call
// starts it again.
func TestStdioServerDiedDuringCallSaysWhy(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ModeStateful, ModeStateless} {
		t.Run(string(mode), func(t *testing.T) {
			tk, _ := mount(t, ServerConfig{Name: "c", Transport: TransportStdio, Command: exe, Mode: mode, Env: map[string]string{mountTestServerEnv: "crash"}})
			ctx := testCtx(t)
			r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "crash", Name: "mcp__c__crash", Input: map[string]any{}}, toolkit.WriterFuncs{})
			t.Logf("final %s/%s %q", r.State, r.Code, r.Text())
			if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "exit status 3") || !strings.Contains(r.Text(), "panic: the index is corrupt") {
				t.Errorf("a server that died during the call: %s/%s %q, want tool_error with its exit status and its stderr", r.State, r.Code, r.Text())
			}
			if r := tk.Dispatch(ctx, toolkit.ToolCall{ID: "echo", Name: "mcp__c__echo", Input: map[string]any{"text": "again"}}, toolkit.WriterFuncs{}); r.Text() != "again" {
				t.Errorf("the call after the crash: %s/%s %q", r.State, r.Code, r.Text())
			}
		})
	}
}
