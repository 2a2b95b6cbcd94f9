package toolkit_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// A reset_tools call whose context ended before it ran changes nothing,
// as a call of any other tool does not run: it ends interrupted (or
// timeout) and the session's groups stay as they were.
func TestMetaToolEndedBeforeItRuns(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g", Description: "G."})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	passed, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		code toolkit.Code
	}{{cancelled, toolkit.CodeInterrupted}, {passed, toolkit.CodeTimeout}} {
		r := tk.Invoke(c.ctx, toolkit.ToolCall{ID: "1", Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"g": true}})
		if r.Code != c.code {
			t.Errorf("reset_tools with an ended context: %s/%s %q, want %s", r.State, r.Code, r.Text(), c.code)
		}
		st, err := tk.ExportState(context.Background(), "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.ActiveGroups) != 0 {
			t.Errorf("the session's groups after a call that ended before it ran: %v, want none", st.ActiveGroups)
		}
	}
}
