package toolkit_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// lockedBuffer is a log destination read after the goroutine writing it
// ended.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A tool (or middleware) that calls runtime.Goexit (t.FailNow in a tool
// under test, a log.Fatal-like helper gone wrong) ends the goroutine
// running it, which is the caller's: nothing can stop a Goexit, so Invoke
// never returns and the call is never answered. That ended without a
// word; the toolkit's log now says which tool did it (and not when the
// Goexit is Call's consumer's).
func TestToolGoexitIsLogged(t *testing.T) {
	var log lockedBuffer
	tk := newToolkit(t, &toolkit.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	mustAdd(t, tk, toolkit.Raw("quitter", "Q.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		_ = w.Write(toolkit.Text("partial"))
		runtime.Goexit()
		return nil
	}))
	var got *toolkit.Response
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		got = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c1", Name: "quitter"})
	}()
	<-ended
	if got != nil {
		t.Fatalf("Invoke returned %+v from a goroutine the tool ended", got)
	}
	if out := log.String(); !strings.Contains(out, "runtime.Goexit") || !strings.Contains(out, "tool=quitter") || !strings.Contains(out, "call=c1") {
		t.Errorf("the log says %q, want an error naming runtime.Goexit, the tool and the call", out)
	}

	// Call's loop body runs inside the tool's Write: a Goexit there is
	// the consumer's (t.FailNow in a test's loop), not the tool's.
	log.mu.Lock()
	log.b.Reset()
	log.mu.Unlock()
	mustAdd(t, tk, toolkit.Raw("talker", "T.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("hello"))
	}))
	ended = make(chan struct{})
	go func() {
		defer close(ended)
		for range tk.Call(context.Background(), toolkit.ToolCall{ID: "c2", Name: "talker"}) {
			runtime.Goexit()
		}
	}()
	<-ended
	if out := log.String(); out != "" {
		t.Errorf("the consumer's Goexit was logged: %q", out)
	}
}
