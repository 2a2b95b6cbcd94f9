package main

import (
	"io"
	"sync"
)

// logBuffer is how many bytes of log lines wait for the output at most;
// a line past it waits for the output to catch up.
const logBuffer = 4 << 20

// logWriter hands log lines to a goroutine that writes them out, so a call
// does not wait for the pipe, terminal or file the logs go to (a burst of
// calls, one line each, would otherwise hold the calls that wrote them,
// and those count as running). Lines go out in order, many in one write.
// Close writes what is left.
type logWriter struct {
	out io.Writer

	mu     sync.Mutex
	cond   sync.Cond // signals lines to write, and room made
	buf    []byte
	spare  []byte
	closed bool
	done   chan struct{}
}

func newLogWriter(out io.Writer) *logWriter {
	l := &logWriter{out: out, done: make(chan struct{})}
	l.cond.L = &l.mu
	go l.loop()
	return l
}

// Write queues p; it waits only while logBuffer bytes are queued.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.buf) > 0 && len(l.buf)+len(p) > logBuffer && !l.closed {
		l.cond.Wait()
	}
	if l.closed {
		return l.out.Write(p) // after Close: straight through
	}
	l.buf = append(l.buf, p...)
	l.cond.Broadcast()
	return len(p), nil
}

func (l *logWriter) loop() {
	defer close(l.done)
	l.mu.Lock()
	for {
		for len(l.buf) == 0 && !l.closed {
			l.cond.Wait()
		}
		if len(l.buf) == 0 {
			l.mu.Unlock()
			return
		}
		out := l.buf
		l.buf = l.spare[:0]
		l.mu.Unlock()
		l.out.Write(out) // a log that cannot be written has nowhere to say so
		l.mu.Lock()
		l.spare = out
		l.cond.Broadcast()
	}
}

// Close writes the queued lines and returns when they are out.
func (l *logWriter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.done
	return nil
}
