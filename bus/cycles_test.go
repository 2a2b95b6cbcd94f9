package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// selfNode is a struct that holds itself through a pointer, which the
// msgpack library follows with no bound.
type selfNode struct {
	Name string
	Next *selfNode
}

// TestStructHoldingItselfOverBus: a call whose Input holds a struct that
// holds itself ends invalid_input at the client, and a tool's metadata
// holding one ends its call internal, where the encoder recursed
// until the stack overflowed and the caller's or the worker's process
// died; both serve the next call. In a child process, as a stack
// overflow is no panic a test survives.
func TestStructHoldingItselfOverBus(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CYCLES_CHILD") {
		return
	}
	self := &selfNode{Name: "a"}
	self.Next = self
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	var ran atomic.Int32
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran.Add(1)
		return nil
	}))
	mustAdd(t, tk, toolkit.Stream("selfmeta", "Answer with metadata holding itself.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			c := toolkit.Text("out")
			c.Metadata = map[string]any{"v": self}
			return w.Write(c)
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: map[string]any{"n": self}})
	if want := "BadRequestError: the input cannot be encoded: msgpack: the value is nested deeper than 10000"; r.Code != toolkit.CodeInvalidInput || r.Text() != want {
		t.Errorf("input: %s %q, want invalid_input %q", r.Code, r.Text(), want)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the tool ran %d times, want 0", n)
	}
	r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "selfmeta", Input: map[string]any{}})
	if r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "nested deeper than 10000") {
		t.Errorf("metadata: final %s %s %q, want internal saying it is nested too deep", r.State, r.Code, r.Text())
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: map[string]any{}}); r.State != toolkit.StateSuccess {
		t.Errorf("a call after them: %s %s %q", r.State, r.Code, r.Text())
	}
}

// embedsItself embeds a pointer to itself, a type the msgpack library
// cannot make its encoder for.
type embedsItself struct {
	*embedsItself
	N int
}

// TestTypeEmbeddingItselfOverBus: a tool's metadata holding a struct
// that embeds a pointer to itself (type E struct{ *E }), nil, ends its
// call internal naming the type, where the msgpack library recursed
// making its encoder until the stack overflowed and the worker's
// process died; the worker serves the next call. In a child process, as
// a stack overflow is no panic a test survives.
func TestTypeEmbeddingItselfOverBus(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CYCLES_CHILD") {
		return
	}
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return nil
	}))
	mustAdd(t, tk, toolkit.Stream("selftype", "Answer with metadata of a type embedding itself.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			c := toolkit.Text("out")
			c.Metadata = map[string]any{"v": embedsItself{N: 1}}
			return w.Write(c)
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "selftype", Input: map[string]any{}})
	if r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "embedsItself embeds itself") {
		t.Errorf("metadata: final %s %s %q, want internal saying the type embeds itself", r.State, r.Code, r.Text())
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: map[string]any{}}); r.State != toolkit.StateSuccess {
		t.Errorf("a call after it: %s %s %q", r.State, r.Code, r.Text())
	}
}

// TestPointerHoldingItselfOverBus: a call whose Input holds a pointer to
// an interface holding itself (var x any; x = &x), which the msgpack
// library follows writing nothing, ends invalid_input at the client, and
// a tool's chunk metadata holding one ends its call internal (its log
// data holding one is dropped), where the encoder recursed until the
// stack overflowed and the caller's or the worker's process died; both
// serve the next call.
// In a child process, as a stack overflow is no panic a test survives.
func TestPointerHoldingItselfOverBus(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CYCLES_CHILD") {
		return
	}
	var self any
	self = &self
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	var ran atomic.Int32
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran.Add(1)
		return nil
	}))
	mustAdd(t, tk, toolkit.Stream("selfmeta", "Answer with metadata holding itself.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			c := toolkit.Text("out")
			c.Metadata = map[string]any{"v": self}
			return w.Write(c)
		}))
	mustAdd(t, tk, toolkit.Stream("selflog", "Log data holding itself.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			if err := toolkit.Log(w, toolkit.LogMessage{Level: "info", Data: self}); err != nil {
				return err
			}
			return w.Write(toolkit.Text("out"))
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: map[string]any{"n": self}})
	if want := "BadRequestError: the input cannot be encoded: msgpack: the value is nested deeper than 10000"; r.Code != toolkit.CodeInvalidInput || r.Text() != want {
		t.Errorf("input: %s %q, want invalid_input %q", r.Code, r.Text(), want)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the tool ran %d times, want 0", n)
	}
	r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "selfmeta", Input: map[string]any{}})
	if r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "nested deeper than 10000") {
		t.Errorf("metadata: final %s %s %q, want internal saying it is nested too deep", r.State, r.Code, r.Text())
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: map[string]any{}}); r.State != toolkit.StateSuccess {
		t.Errorf("a call after it: %s %s %q", r.State, r.Code, r.Text())
	}
	// A log message that cannot be sent is dropped, as any is, and the
	// worker says so in its log.
	r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "selflog", Input: map[string]any{}})
	if r.State != toolkit.StateSuccess || r.Text() != "out" {
		t.Errorf("log data: final %s %s %q, want success \"out\"", r.State, r.Code, r.Text())
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: map[string]any{}}); r.State != toolkit.StateSuccess {
		t.Errorf("a call after it: %s %s %q", r.State, r.Code, r.Text())
	}
}
