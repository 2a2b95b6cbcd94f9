package builtin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// A progress bar writes a little, without a line break, many times a
// second. The unterminated line was sent only after 200ms without any
// output, which such a command never leaves, so nothing of it arrived
// until 64 KiB had piled up. It arrives while the command runs.
func TestShellStreamsBusyUnterminatedLine(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled only once a dot has arrived: the guard ends the call
	// otherwise.
	guard, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	got := false
	r := streamUntil(t, tk, guard, builtin.ExecutePythonCode, map[string]any{
		"code": "import sys, time\nwhile True:\n    sys.stdout.write('.')\n    sys.stdout.flush()\n    time.sleep(0.002)\n",
	}, func(s string) {
		if strings.Contains(s, ".") && guard.Err() == nil {
			got = true
			cancel()
		}
	})
	if !got {
		t.Fatalf("no output arrived in a minute of dots; final %s %s: %.200s", r.State, r.Code, r.Text())
	}
	if r.State != toolkit.StateInterrupted {
		t.Errorf("final state %s, want interrupted", r.State)
	}
}
