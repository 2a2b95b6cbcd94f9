package mcp

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// lockedLog is a log destination safe for the gateway's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGatewayClosingRefreshLogsNoWarning: a session's tool list refresh
// still under way when the gateway closes (a stdio client that ends its
// input right after listing) is given up quietly; it logged "cannot list
// the session's tools" with "context canceled", a warning about nothing
// wrong at every such end.
func TestGatewayClosingRefreshLogsNoWarning(t *testing.T) {
	f := startFleet(t)
	var log lockedLog
	ctx := natstest.Ctx(t)
	g, err := NewGateway(ctx, natstest.Connect(t, f.srv), &GatewayOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := g.newSession(ctx, "s1", "", "")
	if s == nil || !s.lists("echo") {
		t.Fatalf("the session does not list echo:\n%s", log.String())
	}
	g.cancel() // the gateway closing, as Close does first
	s.refresh(g.ctx, false, 0)
	if got := log.String(); strings.Contains(got, "level=WARN") {
		t.Errorf("a refresh at close logged a warning:\n%s", got)
	}
	if !s.lists("echo") {
		t.Error("the refresh given up changed the session's list")
	}
}

// lists reports whether the session lists the tool.
func (s *gatewaySession) lists(name string) bool {
	p := s.listed.Load()
	return p != nil && slices.ContainsFunc(*p, func(t *sdk.Tool) bool { return t.Name == name })
}
