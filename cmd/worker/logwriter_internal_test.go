package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// slowWriter blocks every write until released.
type slowWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	release chan struct{}
	writes  int
}

func (s *slowWriter) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(p)
}

// TestLogWriter: lines queue while the output is stuck, go out in order
// and in few writes, and Close writes the rest.
func TestLogWriter(t *testing.T) {
	out := &slowWriter{release: make(chan struct{})}
	l := newLogWriter(out)
	var want strings.Builder
	for i := range 1000 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if _, err := l.Write([]byte(line)); err != nil { // does not wait for the stuck output
			t.Fatal(err)
		}
	}
	close(out.release)
	l.Close()
	if got := out.buf.String(); got != want.String() {
		t.Fatalf("output differs: %d bytes, want %d", len(got), want.Len())
	}
	if out.writes > 3 {
		t.Errorf("%d writes for 1000 queued lines", out.writes)
	}
	if _, err := l.Write([]byte("after\n")); err != nil || !strings.HasSuffix(out.buf.String(), "after\n") {
		t.Errorf("a write after Close: %v", err)
	}
}
