package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCallsOfRemovedToolKeepTheirLabel: a tool removed from the worker
// while its calls were on their way or running (an MCP server's tools
// refreshed, README: Guarantees) still had those calls end on this worker
// (they ran, or were answered unavailable). They were counted under
// _unknown, the label of names a caller made up, instead of under the
// tool: an operator watching the tool's error rate lost them, and
// _unknown rose as if callers sent garbage. A name the worker served
// keeps its label; a name it never served is still <unknown>.
func TestCallsOfRemovedToolKeepTheirLabel(t *testing.T) {
	tk := toolkit.New(nil)
	echo := toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "", nil })
	if err := tk.Add(echo); err != nil {
		t.Fatal(err)
	}
	o := newOps()
	o.watch(tk)
	late := toolkit.Func("late", "Added after the worker started.", func(ctx context.Context, in struct{}) (string, error) { return "", nil })
	if err := tk.Add(late); err != nil {
		t.Fatal(err)
	}
	tk.Remove("echo", "late") // before any of their calls ended
	o.onFinal("echo", toolkit.StateSuccess, "", time.Millisecond)
	o.onFinal("late", toolkit.StateError, toolkit.CodeUnavailable, 0)
	o.onFinal("made_up", toolkit.StateError, toolkit.CodeNotFound, 0)
	mfs, err := o.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{} // by tool label
	for _, mf := range mfs {
		if mf.GetName() != "toolbus_worker_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tool" {
					got[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	if got["echo"] != 1 || got["late"] != 1 || got[unknownTool] != 1 || len(got) != 3 {
		t.Errorf("toolbus_worker_calls_total by tool: %v, want echo 1, late 1 and %s 1 (made_up)", got, unknownTool)
	}
}

// TestDroppedMessagesMetric: the messages NATS dropped for the worker
// (bus.WorkerCounters.Dropped) had no metric, so a worker losing calls
// to a full inbox showed nothing on /metrics. They are
// toolbus_worker_dropped_messages_total, by kind of subscription.
func TestDroppedMessagesMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	var timeouts atomic.Uint64
	reg.MustRegister(workerCollector{counters: func() bus.WorkerCounters {
		return bus.WorkerCounters{Dropped: map[string]uint64{bus.DroppedCalls: 16, bus.DroppedCancels: 0}}
	}, timeouts: &timeouts})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "toolbus_worker_dropped_messages_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "subscription" {
					got[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	if got[bus.DroppedCalls] != 16 || len(got) != 2 {
		t.Errorf("toolbus_worker_dropped_messages_total by subscription: %v, want calls 16, cancels 0", got)
	}
}

// TestToolNamedUnknownKeepsItsSeries: "_unknown", the label of names a
// caller made up, is a valid tool name, so the calls of a tool named
// _unknown and those of made-up names were counted as one. The bucket's
// label is one no tool can have.
func TestToolNamedUnknownKeepsItsSeries(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("_unknown", "A tool of that name.", func(ctx context.Context, in struct{}) (string, error) { return "", nil })); err != nil {
		t.Fatal(err)
	}
	o := newOps()
	o.watch(tk)
	o.onFinal("_unknown", toolkit.StateSuccess, "", time.Millisecond)
	o.onFinal("made_up", toolkit.StateError, toolkit.CodeNotFound, 0)
	mfs, err := o.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{} // by tool label
	for _, mf := range mfs {
		if mf.GetName() != "toolbus_worker_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tool" {
					got[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	if got["_unknown"] != 1 || got[unknownTool] != 1 || len(got) != 2 {
		t.Errorf("toolbus_worker_calls_total by tool: %v, want _unknown 1 (the tool) and %s 1 (made_up)", got, unknownTool)
	}
}
