package permission

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestExploreShellWritesNothing: a session in explore mode runs only
// what reads. Each command below was read as read-only and run by the
// worker's `sh -c`, which wrote the file it names (dash and bash alike);
// over the bus, each now ends denied and the file is never made.
func TestExploreShellWritesNothing(t *testing.T) {
	s := natstest.Embedded(t, false)
	g, err := NewGuard(kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil), &Options{Mode: ModeExplore, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	tk := toolkit.New(nil)
	tk.Use(Middleware(g))
	if err := builtin.Register(tk, builtin.Config{Workspace: ws, Tools: []builtin.Tool{{Name: builtin.ExecuteShellCommand, Group: toolkit.BasicGroup}}}); err != nil {
		t.Fatal(err)
	}
	wk, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wk.Stop(context.Background()) })
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i, tc := range []struct{ command, file string }{
		{"echo $\\\n(touch made1)", "made1"},
		{"echo \"$\\\n(touch made2)\"", "made2"},
		{"ls ${x:- #}; touch made3", "made3"},
		{"echo secret >\\3>/dev/null", "3"},
		{"echo secret >\\", "\\"},
		{"grep x <>21>&2", "21"},
		{"uniq /dev/null -- -made7", "-made7"},
		{"echo \"${x:-\"'\"}\"\ntouch made8\necho \"'\"\n\"", "made8"},
	} {
		r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "c" + string(rune('a'+i)), Name: builtin.ExecuteShellCommand,
			Session: "s1", Input: map[string]any{"command": tc.command}})
		if r.State != toolkit.StateDenied {
			t.Errorf("%q in explore mode: %s/%s %q, want denied", tc.command, r.State, r.Code, r.Text())
		}
		if _, err := os.Lstat(filepath.Join(ws, tc.file)); err == nil {
			t.Errorf("%q in explore mode made the file %q", tc.command, tc.file)
		}
	}
}
