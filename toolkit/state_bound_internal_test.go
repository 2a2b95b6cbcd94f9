package toolkit

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A MemoryState that sees ever new sessions remembers at most
// MaxMemorySessions of them, forgetting the least recently used: a
// session still in use keeps its groups.
func TestMemoryStateBounded(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryState()
	if _, err := m.Store(ctx, "kept", []string{"vault"}); err != nil {
		t.Fatal(err)
	}
	for i := range MaxMemorySessions + 1000 {
		if _, err := m.Store(ctx, fmt.Sprintf("s%d", i), []string{"vault"}); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			m.Load(ctx, "kept", 0)
		}
	}
	m.mu.Lock()
	n := len(m.sessions)
	m.mu.Unlock()
	if n > MaxMemorySessions {
		t.Fatalf("%d sessions remembered, bound %d", n, MaxMemorySessions)
	}
	if groups, _, ok, _ := m.Load(ctx, "kept", 0); !ok || len(groups) != 1 {
		t.Errorf("a session in use was forgotten: %v %v", groups, ok)
	}
	if _, _, ok, _ := m.Load(ctx, "s0", 0); ok {
		t.Error("the least recently used session is still remembered")
	}
	if _, _, ok, _ := m.Load(ctx, fmt.Sprintf("s%d", MaxMemorySessions+999), 0); !ok {
		t.Error("the latest session was forgotten")
	}
}

// A session name is the caller's to choose, and only the request's size
// bounds it (a worker's max_payload: 1 MiB by default, more where
// configured): MaxMemorySessions of them could make a worker keep
// 100 GiB of names. A MemoryState remembers at most
// MaxMemorySessionBytes of session names, forgetting the least recently
// used as past MaxMemorySessions.
func TestMemoryStateBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryState()
	if _, err := m.Store(ctx, "kept", []string{"vault"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 64<<10)
	n := MaxMemorySessionBytes/len(long) + 100
	for i := range n {
		if _, err := m.Store(ctx, fmt.Sprint(i, long), []string{"vault"}); err != nil {
			t.Fatal(err)
		}
		m.Load(ctx, "kept", 0)
	}
	m.mu.Lock()
	held := 0
	for s := range m.sessions {
		held += len(s)
	}
	counted := m.bytes
	m.mu.Unlock()
	if held > MaxMemorySessionBytes {
		t.Fatalf("%d sessions of %d KiB names: %d KiB of names remembered, bound %d KiB", n, len(long)>>10, held>>10, MaxMemorySessionBytes>>10)
	}
	if counted != held {
		t.Errorf("%d bytes of names counted, %d held", counted, held)
	}
	if groups, _, ok, _ := m.Load(ctx, "kept", 0); !ok || len(groups) != 1 {
		t.Errorf("a session in use was forgotten: %v %v", groups, ok)
	}
	if _, _, ok, _ := m.Load(ctx, fmt.Sprint(0, long), 0); ok {
		t.Error("the least recently used session is still remembered")
	}
	if _, _, ok, _ := m.Load(ctx, fmt.Sprint(n-1, long), 0); !ok {
		t.Error("the latest session was forgotten")
	}
	// One session's name over the whole bound is remembered alone.
	huge := strings.Repeat("h", MaxMemorySessionBytes+1)
	if _, err := m.Store(ctx, huge, []string{"vault"}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := m.Load(ctx, huge, 0); !ok {
		t.Error("the latest session, over the bound alone, was forgotten")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sessions) != 1 || m.bytes != len(huge) {
		t.Errorf("%d sessions, %d bytes remembered beside a session over the bound; want it alone", len(m.sessions), m.bytes)
	}
}
