package permission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// TestKVLongSessionKeepsConnection: a caller names a session whose KV key
// would be longer than a NATS subject may be (wire.MaxSessionKeyLen). Its
// call must end with a clear error, and the worker's connection must stay
// open: the key went into a subject longer than the server's control-line
// limit, the server answered -ERR and closed the connection, and the
// client library took that for fatal, so the worker served nothing more
// until it was restarted.
func TestKVLongSessionKeepsConnection(t *testing.T) {
	s := startNATS(t, t.TempDir())
	nc, js := connect(t, s)
	w := newWorker(t, kvStore(t, js, nil), nil)
	long := strings.Repeat("s", 10_000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := w.tk.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "lookup", Session: long, Input: map[string]any{"key": "k"}})
	if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "session") {
		t.Errorf("a call of a session too long to key: %s %s %q", r.State, r.Code, r.Text())
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil || nc.IsClosed() {
		t.Fatalf("the connection after a call of a %d-byte session: %v (status %v)", len(long), err, nc.Status())
	}
	// The store still serves other sessions on that connection.
	wantResp(t, w.call(t, "short", "c2", "lookup", map[string]any{"key": "k"}), toolkit.StateSuccess, "", "value of k")
	// Nor can a policy, an approval or a pending call be kept under it.
	if _, err := w.g.store.UpdateSession(ctx, long, func(p *SessionPolicy) error { p.Mode = ModeBypass; return nil }); err == nil {
		t.Error("a policy stored for a session too long to key")
	}
	if nc.IsClosed() {
		t.Fatal("the connection closed on a policy update of a long session")
	}
}
