package main

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayCallsOfToolGoneKeepTheirLabel: a call of a tool the fleet
// served whose answer came after the tool had left the fleet (its only
// worker died, and the call ended worker_lost; its MCP server's tools
// were refreshed) was counted under _unknown, the label of names an MCP
// client made up: an operator watching the tool's error rate lost exactly
// those failures, and _unknown rose as if clients sent garbage. A tool
// labelled once keeps its label, as on the worker; a name the fleet never
// served is still <unknown>.
func TestGatewayCallsOfToolGoneKeepTheirLabel(t *testing.T) {
	s := natstest.Embedded(t, true)
	state, err := bus.NewKVState(natstest.Ctx(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "", nil })); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	nc := natstest.Connect(t, s)
	g, err := mcp.NewGateway(natstest.Ctx(t), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	m := newGatewayMetrics()
	m.serve(nc, g)
	natstest.WaitFor(t, "the fleet to serve echo", func() bool { _, ok := g.Fleet().ToolInfo("echo"); return ok })
	m.onCall("echo", toolkit.StateSuccess, "", time.Millisecond)
	tk.Remove("echo")
	natstest.WaitFor(t, "echo to leave the fleet", func() bool { _, ok := g.Fleet().ToolInfo("echo"); return !ok })
	m.onCall("echo", toolkit.StateError, toolkit.CodeWorkerLost, time.Millisecond)
	m.onCall("made_up", toolkit.StateError, toolkit.CodeUnavailable, time.Millisecond)
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{} // by tool label
	for _, mf := range mfs {
		if mf.GetName() != "toolbus_gateway_calls_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "tool" {
					got[l.GetValue()] += mt.GetCounter().GetValue()
				}
			}
		}
	}
	if got["echo"] != 2 || got[unknownTool] != 1 || len(got) != 2 {
		t.Errorf("toolbus_gateway_calls_total by tool: %v, want echo 2 and %s 1 (made_up)", got, unknownTool)
	}
}
