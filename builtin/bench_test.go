package builtin_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

func benchCall(b *testing.B, tk *toolkit.Toolkit, name string, input map[string]any) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: "b", Name: name, Input: input, Session: session})
		if r.State != toolkit.StateSuccess {
			b.Fatalf("%s: %s", r.State, r.Text())
		}
	}
}

func benchKit(b *testing.B) (*toolkit.Toolkit, string) {
	b.Helper()
	ws := b.TempDir()
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: ws, Tools: allTools()}); err != nil {
		b.Fatal(err)
	}
	tk.Invoke(context.Background(), toolkit.ToolCall{ID: "on", Name: toolkit.MetaToolName, Session: session, Input: map[string]any{builtin.ExecGroup: true}})
	return tk, ws
}

func BenchmarkEcho(b *testing.B) {
	tk, _ := benchKit(b)
	benchCall(b, tk, builtin.Echo, map[string]any{"text": "hi"})
}

// BenchmarkShellTrue is the fixed cost of one command: pipe, process
// group, fork/exec of sh, wait.
func BenchmarkShellTrue(b *testing.B) {
	tk, _ := benchKit(b)
	benchCall(b, tk, builtin.ExecuteShellCommand, map[string]any{"command": "true"})
}

// BenchmarkShellOutput streams 1 MB of output (20000 lines) per call.
func BenchmarkShellOutput(b *testing.B) {
	tk, _ := benchKit(b)
	b.SetBytes(20000 * 50)
	benchCall(b, tk, builtin.ExecuteShellCommand, map[string]any{"command": "yes 0123456789012345678901234567890123456789012345678 | head -n 20000"})
}

func BenchmarkViewTextFile(b *testing.B) {
	tk, ws := benchKit(b)
	writeFile(b, filepath.Join(ws, "f.txt"), strings.Repeat("a line of text in a file\n", 1000))
	benchCall(b, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt", "ranges": []any{100, 200}})
}
