package mcp

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// disable_tools naming a tool the server does not have (a typo, most
// often: the tool meant stays enabled) is warned of, once per name, and
// the other tools mount; it went unsaid.
func TestDisableToolsUnknownWarned(t *testing.T) {
	cfg := everythingStdio(t, "ev")
	cfg.DisableTools = []string{"echo", "toggle-simulated-loging"}
	var log lockedLog
	c, err := NewClient(cfg, &Options{RetryInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tk := toolkit.New(nil)
	if err := c.Start(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range tk.Tools() {
		got = append(got, tl.Name)
	}
	if slices.Contains(got, "mcp__ev__echo") || !slices.Contains(got, "mcp__ev__get-sum") {
		t.Fatalf("tools %v: want echo disabled, the others mounted", got)
	}
	if err := c.Register(testCtx(t), tk); err != nil { // a re-sync lists again
		t.Fatal(err)
	}
	out := log.String()
	if n := strings.Count(out, "toggle-simulated-loging"); n != 1 || !strings.Contains(out, "disable_tools") {
		t.Fatalf("log %q: want one warning naming toggle-simulated-loging in disable_tools", out)
	}
	if strings.Contains(out, `"echo"`) {
		t.Fatalf("log %q: echo is the server's and disabled, no warning", out)
	}
}
