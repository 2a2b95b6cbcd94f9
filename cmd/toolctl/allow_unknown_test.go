package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// `toolctl allow` with a rule for a tool no worker serves (a typo, most
// often) stores it, as the tool may come later, but says so and names
// the nearest tool: the rule was stored silently and never matched.
func TestAllowWarnsOfUnservedTool(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	nc := natstest.Connect(t, s)
	_, tk := guarded(t, ctx, natstest.JS(t, nc))
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, _ struct{}) (string, error) { return "deployed", nil })); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	toolctl := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, append([]string{"--nats", s.ClientURL()}, args...), nil, &so, &se)
		return so.String(), se.String(), code
	}
	out, se, code := toolctl("allow", "--session", "s1", "deplyo:*.txt")
	if code != exitOK || !strings.Contains(out, "allow deplyo:*.txt") || !strings.Contains(se, "no worker serves deplyo") || !strings.Contains(se, "did you mean deploy?") {
		t.Fatalf("allow of a tool nobody serves: exit %d, want it stored with a warning naming deploy\n%s%s", code, out, se)
	}
	out, se, code = toolctl("allow", "--session", "s1", "deploy")
	if code != exitOK || se != "" {
		t.Fatalf("allow of a served tool: exit %d, want no warning\n%s%s", code, out, se)
	}
}
