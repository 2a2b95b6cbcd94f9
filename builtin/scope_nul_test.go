package builtin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionNamesWithNULKeepOut: a session's own directory was found
// from the call's session scope, which joins an identity and a session
// with NUL bytes, split again. A caller of the toolkit whose names hold
// NULs (the bus refuses them, a program embedding the toolkit need not)
// was taken for another: the anonymous session "\x00alice\x00s1" worked
// in identity alice's session s1, and identity "alice\x00b"'s session s
// in alice's session "b\x00s". The directory is now found from the identity and
// the session themselves.
func TestSessionNamesWithNULKeepOut(t *testing.T) {
	tk, _ := kit(t, builtin.Config{PerSessionWorkspace: true,
		Tools: []builtin.Tool{{Name: builtin.ViewTextFile}, {Name: builtin.WriteTextFile}}})
	call := func(identity, session, tool string, in map[string]any) *toolkit.Response {
		return tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c", Name: tool, Identity: identity, Session: session, Input: in})
	}
	for _, c := range []struct{ identity, session, victim string }{
		{"", "\x00alice\x00s1", "s1"},
		{"alice\x00b", "s", "b\x00s"},
	} {
		wantOK(t, call("alice", c.victim, builtin.WriteTextFile, map[string]any{"file_path": "secret.txt", "content": "alice's secret\n"}))
		r := call(c.identity, c.session, builtin.ViewTextFile, map[string]any{"file_path": "secret.txt"})
		if strings.Contains(r.Text(), "alice's secret") {
			t.Errorf("identity %q session %q read alice's file of session %q", c.identity, c.session, c.victim)
		}
		wantOK(t, call(c.identity, c.session, builtin.WriteTextFile, map[string]any{"file_path": "secret.txt", "content": "overwritten\n"}))
		if got := wantOK(t, call("alice", c.victim, builtin.ViewTextFile, map[string]any{"file_path": "secret.txt"})); !strings.Contains(got, "alice's secret") {
			t.Errorf("identity %q session %q overwrote alice's file of session %q", c.identity, c.session, c.victim)
		}
	}
}
