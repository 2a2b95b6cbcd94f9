package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayWatchSurvivesRestart: the NATS server restarts; the gateway
// watches the group state again, so an activation written afterwards
// reaches its session as a tools/list_changed.
func TestGatewayWatchSurvivesRestart(t *testing.T) {
	dir, port := t.TempDir(), natstest.FreePort(t)
	start := func() *embedded.Server {
		srv, err := embedded.Start(&embedded.Options{Listen: fmt.Sprintf("127.0.0.1:%d", port), StoreDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	defer func() { srv.Shutdown() }()
	connect := func() *nats.Conn {
		return natstest.URLConn(t, srv.ClientURL())
	}
	js := natstest.JS(t, connect())
	state, err := bus.NewKVState(context.Background(), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "extra", Description: "Extra tools."}); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Func("shout", "Upper-case the text.", func(ctx context.Context, in textIn) (string, error) { return strings.ToUpper(in.Text), nil }), toolkit.InGroup("extra")); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(connect(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	gnc := connect()
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g, err := NewGateway(ctx, gnc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	if _, ok := listNames(t, c)["shout"]; ok {
		t.Fatal("shout listed before its group is on")
	}

	srv.Shutdown()
	srv = start()
	natstest.WaitFor(t, "the gateway's reconnect", func() bool { return gnc.IsConnected() })
	time.Sleep(100 * time.Millisecond) // the gateway makes its watch again on the reconnect signal

	drain(c.changed)
	bc, err := bus.NewClient(connect(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	natstest.WaitFor(t, "reset_tools after the restart", func() bool {
		r := bc.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: c.cs.ID(), Input: map[string]any{"extra": true}})
		return r.State == toolkit.StateSuccess
	})
	waitChanged(t, c, "after an activation written once the server was back")
	// The change seen may be a late one of before: wait for the list.
	natstest.WaitFor(t, "the session to list the group turned on after the restart", func() bool {
		_, ok := listNames(t, c)["shout"]
		return ok
	})
}
