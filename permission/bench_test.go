package permission

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
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

// BenchmarkListFilter: one session's listing of a fleet of 1,000 tools
// (schemas of a few properties, one worker announcing permission
// defaults) through ListFilter, which looks each tool up in the fleet
// for its flags and for the instances serving it.
func BenchmarkListFilter(b *testing.B) {
	s := startNATS(b, b.TempDir())
	nc, _ := connect(b, s)
	const n = 1_000
	ann := wire.Announcement{Format: 1, Instance: "w1", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
		Meta: map[string]any{wire.MetaPermissions: Announced{Mode: string(ModeExplore)}}} // hides the tools not read-only
	for i := range n {
		ann.Tools = append(ann.Tools, wire.AnnouncedTool{Name: fmt.Sprint("t", i), Description: "A tool.", Group: "basic", Idempotency: "unknown",
			ReadOnly: i%2 == 0, Parameters: map[string]any{"type": "object", "required": []any{"path"}, "properties": map[string]any{
				"path": map[string]any{"type": "string", "description": "The path."}, "n": map[string]any{"type": "integer", "enum": []any{1, 2, 3}}}},
			Order: []toolkit.KeyOrder{{Path: "/properties", Keys: []string{"path", "n"}}}})
	}
	data, err := wire.JSON.Marshal(&ann)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := discovery.NewFleet(ctx, nc, &discovery.FleetOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.AnnounceSubject(ann.Instance), Header: wire.JSON.Header(), Data: data}); err != nil {
		b.Fatal(err)
	}
	for len(f.Instances()) == 0 {
		if ctx.Err() != nil {
			b.Fatal("the announcement was not applied")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := NewMemoryStore()
	filter := ListFilter(func(context.Context) (Store, error) { return st, nil }, slog.New(slog.DiscardHandler))
	c := f.Catalog()
	schemas := c.Schemas(nil)
	b.ReportAllocs()
	for b.Loop() {
		kept, err := filter(ctx, f, "s", schemas)
		if err != nil {
			b.Fatal(err)
		}
		if len(kept) != n/2 { // the read-only half
			b.Fatalf("%d tools kept, want %d", len(kept), n/2)
		}
	}
}
