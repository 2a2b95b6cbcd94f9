package bus_test

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestLongNamesCutInErrors: an invalid call id or session as long as a
// message is named in the error by its start and its length, not echoed
// whole.
func TestLongNamesCutInErrors(t *testing.T) {
	s := natstest.Embedded(t, true)
	c := newClient(t, natstest.Connect(t, s), nil)
	long := strings.Repeat("x", 5000) + "!"

	resp := c.Invoke(ctxT(t), toolkit.ToolCall{ID: long, Name: "echo"})
	if resp.Code != toolkit.CodeInvalidInput || len(resp.Text()) > 512 || !strings.Contains(resp.Text(), "(5001 bytes)") {
		t.Errorf("a 5001-byte call id: code %s, %d bytes of text: %.300s", resp.Code, len(resp.Text()), resp.Text())
	}
	if err := c.Cancel(long); err == nil || len(err.Error()) > 512 {
		t.Errorf("Cancel of a 5001-byte call id: %.300v", err)
	}
	if r := c.Result(ctxT(t), long); r.Code != toolkit.CodeInvalidInput || len(r.Text()) > 512 {
		t.Errorf("Result of a 5001-byte call id: code %s, %d bytes of text: %.300s", r.Code, len(r.Text()), r.Text())
	}
	if _, err := c.ActiveGroups(ctxT(t), strings.Repeat("s", 100_000), 0); err == nil || len(err.Error()) > 512 {
		t.Errorf("ActiveGroups of a 100,000-byte session: %.300v", err)
	}
}

// TestLongSessionRefusedBeforeBucket: SessionSchemas and Instructions read
// a session's groups as ActiveGroups does, so a session too long for a KV
// key is refused by them too while the groups bucket does not exist yet
// (they listed the announced defaults), and named by its start.
func TestLongSessionRefusedBeforeBucket(t *testing.T) {
	s := natstest.Embedded(t, true)
	c := newClient(t, natstest.Connect(t, s), nil)
	long := strings.Repeat("s", 100_000)
	if _, err := c.SessionSchemas(ctxT(t), long, 0); err == nil || len(err.Error()) > 512 {
		t.Errorf("SessionSchemas of a 100,000-byte session: %.300v", err)
	}
	if _, err := c.Instructions(ctxT(t), long); err == nil || len(err.Error()) > 512 {
		t.Errorf("Instructions of a 100,000-byte session: %.300v", err)
	}
}
