package bus_test

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableCallOfLongestToolName: a tool whose name is as long as a
// tool name may be (toolkit.MaxNameLen) has its consumer of the calls
// stream, named after it, and its durable calls run.
func TestDurableCallOfLongestToolName(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	tool := echoTool()
	tool.Name = strings.Repeat("e", toolkit.MaxNameLen)
	mustAdd(t, tk, tool)
	durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: tool.Name, Durable: true, Input: map[string]any{"text": "kept"}}); r.Text() != "kept" {
		t.Fatalf("a durable call of a tool named with %d bytes: %+v", len(tool.Name), r)
	}
}
