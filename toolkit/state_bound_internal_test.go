package toolkit

import (
	"context"
	"fmt"
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
