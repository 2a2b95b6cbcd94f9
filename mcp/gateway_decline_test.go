package mcp

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayDeclineRecordsDenial: a person declining the gateway's
// approval prompt ended the call denied but recorded nothing: the call
// stayed pending (toolctl pending listed it, an operator could approve
// it) and the same call sent again asked again. With GatewayOptions.Deny
// a decline is recorded as the refusal of that call (permission.Guard.Deny):
// it is no longer pending, and sent again it ends denied without running
// or asking. A prompt dismissed (cancel) decides nothing: the call stays
// pending.
func TestGatewayDeclineRecordsDenial(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	st, err := permission.NewKVStore(natstest.Ctx(t), natstest.JS(t, natstest.Connect(t, srv)), nil)
	if err != nil {
		t.Fatal(err)
	}
	guard, err := permission.NewGuard(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := newWorkerToolkit(t, srv)
	tk.Use(permission.Middleware(guard))
	var deploys atomic.Int32
	if err := tk.Add(toolkit.Func("deploy", "Deploy to an environment.", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		deploys.Add(1)
		return "deployed to " + in.Env, nil
	})); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Connect(t, srv), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	var denied atomic.Value // the call id the gateway denied
	g := startGateway(t, srv, &GatewayOptions{
		Approve: func(ctx context.Context, scope, callID, by string) error {
			_, err := guard.Approve(ctx, scope, callID, by)
			return err
		},
		Deny: func(ctx context.Context, scope, callID, by, reason string) error {
			denied.Store(callID)
			_, err := guard.Deny(ctx, scope, callID, by, reason)
			return err
		},
	})
	u := serveGatewayHTTP(t, g)

	var answer atomic.Value
	var asked atomic.Int32
	client := sdk.NewClient(&sdk.Implementation{Name: "approver", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked.Add(1)
			return &sdk.ElicitResult{Action: answer.Load().(string)}, nil
		},
	})
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	scope := toolkit.SessionScope("", cs.ID())
	pending := func() int {
		t.Helper()
		ps, _, err := guard.ListPending(ctx, scope, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(ps)
	}

	answer.Store("cancel")
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "deploy", Arguments: map[string]any{"env": "staging"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "did not approve") || asked.Load() != 1 {
		t.Fatalf("dismissed: %q (asked %d) %v", resultText(res), asked.Load(), err)
	}
	if n := pending(); n != 1 || denied.Load() != nil {
		t.Fatalf("a dismissed prompt: %d calls pending, denied %v; want the call pending, nothing denied", n, denied.Load())
	}

	answer.Store("decline")
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "deploy", Arguments: map[string]any{"env": "prod"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "did not approve") || asked.Load() != 2 || deploys.Load() != 0 {
		t.Fatalf("declined: %q (asked %d, ran %d) %v", resultText(res), asked.Load(), deploys.Load(), err)
	}
	if n := pending(); n != 1 {
		t.Fatalf("after a decline, %d calls pending; want only the dismissed one", n)
	}
	id, _ := denied.Load().(string)
	if id == "" {
		t.Fatal("the decline was not recorded")
	}
	// The declined call sent again, as a bus client can (the gateway
	// gives each tools/call an id of its own): denied, neither run nor
	// asking.
	bc, err := bus.NewClient(natstest.Connect(t, srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	r := bc.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "deploy", Input: map[string]any{"env": "prod"}, Session: cs.ID()})
	if r.Code != toolkit.CodeDenied || !strings.Contains(r.Text(), "declined") || deploys.Load() != 0 {
		t.Fatalf("the declined call sent again: %s %q (ran %d); want denied with the reason", r.Code, r.Text(), deploys.Load())
	}
}
