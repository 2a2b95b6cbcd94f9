package permission

import (
	"context"
	"log/slog"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// BenchmarkCall measures a full in-process call of a read-only tool with
// and without the permission middleware (memory and KV stores), so the
// middleware's cost reads as a ratio of the "none" case.
func BenchmarkCall(b *testing.B) {
	type echoIn struct {
		Text string `json:"text"`
	}
	build := func(b *testing.B, g *Guard) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		if g != nil {
			tk.Use(Middleware(g))
		}
		if err := tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in echoIn) (string, error) { return in.Text, nil }), toolkit.ReadOnly()); err != nil {
			b.Fatal(err)
		}
		return tk
	}
	guard := func(b *testing.B, st Store) *Guard {
		g, err := NewGuard(st, &Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	run := func(b *testing.B, tk *toolkit.Toolkit) {
		call := toolkit.ToolCall{ID: "c", Name: "echo", Session: "s", Input: map[string]any{"text": "hi"}}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if r := tk.Invoke(ctx, call); r.State != toolkit.StateSuccess {
				b.Fatal(r.Text())
			}
		}
	}
	b.Run("none", func(b *testing.B) { run(b, build(b, nil)) })
	b.Run("memory", func(b *testing.B) { run(b, build(b, guard(b, NewMemoryStore()))) })
	b.Run("kv", func(b *testing.B) {
		s := startNATS(b, b.TempDir())
		_, js := connect(b, s)
		st, err := NewKVStore(context.Background(), js, nil)
		if err != nil {
			b.Fatal(err)
		}
		run(b, build(b, guard(b, st)))
	})
}

// BenchmarkDecide measures the decision alone for a compound shell line.
func BenchmarkDecide(b *testing.B) {
	p := Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{"/srv/app"}, Rules: []Rule{
		{Tool: ShellTool, Pattern: "rm:*", Behavior: Deny},
		{Tool: ShellTool, Pattern: "npm test:*", Behavior: Allow},
	}}
	t, _ := toolkit.Describe(&toolkit.Tool{Name: ShellTool}, toolkit.WithKind(toolkit.KindShell))
	in := map[string]any{"command": "cd /srv/app && npm test -- --watch=false | tee /srv/app/out.log"}
	b.ReportAllocs()
	for b.Loop() {
		Decide(p, t, in)
	}
}
