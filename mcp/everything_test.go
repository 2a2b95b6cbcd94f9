package mcp

import (
	"testing"
)

func TestEverythingSmoke(t *testing.T) {
	tk, _ := mount(t, everythingStdio(t, "ev"))
	for _, tl := range tk.Tools() {
		t.Log(tl.Name, tl.ReadOnly, tl.Idempotency, tl.InputSchema)
	}
	ctx := testCtx(t)
	r := run(t, ctx, tk, "mcp__ev__echo", map[string]any{"message": "hi"})
	t.Logf("%+v", r.final)
	r = run(t, ctx, tk, "mcp__ev__trigger-long-running-operation", map[string]any{"duration": 1, "steps": 4})
	t.Logf("%+v %+v", r.progress, r.final)
}
