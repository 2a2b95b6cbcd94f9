package mcp

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayResetToolsAsWritten: reset_tools called through the gateway
// answers as AgentScope does for the arguments as the model wrote them:
// unknown groups listed in the order written, and a number written 1.0
// a <class 'float'>, 1 a <class 'int'>, where the map the arguments are
// decoded into keeps neither.
func TestGatewayResetToolsAsWritten(t *testing.T) {
	f := startFleet(t)
	c := connectClient(t, gatewayTransport(t, f, "http"))
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	for _, tt := range []struct{ args, want string }{
		{`{"zeta": true, "extra": true, "omega": false}`, "Invalid group name(s): zeta, omega. The current available groups are: extra"},
		{`{"extra": 1.0}`, "Invalid arguments: the argument 'extra' should be a bool value, but got <class 'float'>."},
		{`{"extra": 1}`, "Invalid arguments: the argument 'extra' should be a bool value, but got <class 'int'>."},
	} {
		res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "reset_tools", Arguments: json.RawMessage(tt.args)})
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(res); !res.IsError || got != tt.want {
			t.Errorf("%s: %v %q, want %q", tt.args, res.IsError, got, tt.want)
		}
	}
	// A good call is unchanged.
	if res := callTool(t, ctx, c, "reset_tools", map[string]any{"extra": true}, nil); res.IsError {
		t.Fatalf("reset_tools: %s", resultText(res))
	}
}
