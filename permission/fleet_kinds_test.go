package permission

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

// TestListFilterKnowsTheKinds: a fleet's listing for a session in
// explore mode keeps the shell tool, whose read-only commands (ls, git
// status) run there, and hides the Python one, which never is read-only,
// as the worker's own listing (Guard.Schemas) does. The listing knew the
// tools by their announced flags alone, took the shell tool for a
// function tool that is never read-only and hid it.
func TestListFilterKnowsTheKinds(t *testing.T) {
	s := startNATS(t, t.TempDir())
	nc, _ := connect(t, s)
	tk := toolkit.New(nil)
	for _, tl := range []struct{ name, kind string }{{ShellTool, toolkit.KindShell}, {PythonTool, toolkit.KindPython}} {
		if err := tk.Add(toolkit.Func(tl.name, "Run.", func(context.Context, shellIn) (string, error) { return "", nil }), toolkit.WithKind(tl.kind)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := discovery.NewAnnouncer(nc, tk, &discovery.AnnouncerOptions{Instance: "w1",
		Meta: map[string]func() any{wire.MetaPermissions: Announce(Announced{Mode: "default"})}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := discovery.NewFleet(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	st := NewMemoryStore()
	g, err := NewGuard(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetMode(ctx, "s", ModeExplore); err != nil {
		t.Fatal(err)
	}
	own, err := g.Schemas(ctx, tk, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	filter := ListFilter(func(context.Context) (Store, error) { return st, nil }, nil)
	fleet, err := filter(ctx, f, "s", tk.Schemas(nil))
	if err != nil {
		t.Fatal(err)
	}
	names := func(ss []toolkit.FunctionSchema) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Function.Name)
		}
		return out
	}
	if want := []string{ShellTool}; !slices.Equal(names(own), want) || !slices.Equal(names(fleet), want) {
		t.Fatalf("explore: the worker lists %v, the fleet %v; want %v", names(own), names(fleet), want)
	}
}
