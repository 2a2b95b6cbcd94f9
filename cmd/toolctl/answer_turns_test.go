package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// TestTerminalAskerOneQuestionAtATime: a tool (a mounted MCP server) may
// put several requests at once (bus.MaxAsksPerCall of them); the person
// at the terminal is asked one at a time, not two prompts reading the
// same stdin together (which raced on its buffer and gave an answer to
// whichever read first), and a question whose call ended while it waited
// its turn is not asked.
func TestTerminalAskerOneQuestionAtATime(t *testing.T) {
	in := &heldReader{reads: make(chan struct{}, 4), release: make(chan string, 4)}
	out := &syncBuffer{}
	ask := terminalAsker(in, out)
	params := func(msg string) map[string]any {
		return map[string]any{"message": msg, "requestedSchema": map[string]any{"type": "object",
			"required": []any{"x"}, "properties": map[string]any{"x": map[string]any{"type": "string"}}}}
	}
	first := make(chan any, 1)
	go func() {
		res, _ := ask(context.Background(), toolkit.MethodElicit, params("first?"))
		first <- res
	}()
	select {
	case <-in.reads: // the first question waits for its answer
	case <-time.After(time.Minute):
		t.Fatal("the first question was not asked")
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := ask(ctx, toolkit.MethodElicit, params("second?"))
		second <- err
	}()
	cancel() // its call ended
	select {
	case <-in.reads:
		in.release <- "a\n"
		in.release <- "b\n"
		t.Fatalf("a second question read stdin while the first waited for its answer:\n%s", out.String())
	case err := <-second:
		if err == nil || strings.Contains(out.String(), "second?") {
			t.Fatalf("the second question, whose call ended, returned %v; prompts:\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the second question neither read nor returned")
	}
	in.release <- "a\n"
	res := <-first
	if m, _ := res.(map[string]any); m["action"] != "accept" || m["content"].(map[string]any)["x"] != "a" {
		t.Fatalf("the first question's answer: %v", res)
	}
}

// heldReader signals each Read and returns what the test releases.
type heldReader struct {
	reads   chan struct{}
	release chan string
}

func (r *heldReader) Read(p []byte) (int, error) {
	r.reads <- struct{}{}
	return copy(p, <-r.release), nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
