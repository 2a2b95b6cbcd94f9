package main

import (
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionsMovedNoteIsNotBadContent: a session-bound call whose
// session moved from a worker that is gone ends with the tool's text and
// the worker's note of the move (session_moved_from); the sessions
// scenario counted it bad_content (seen with workers killed beside a
// --nats run). Text that is not the tool's is still bad_content.
func TestSessionsMovedNoteIsNotBadContent(t *testing.T) {
	moved := func(text string) *toolkit.Response {
		return &toolkit.Response{ID: "c", State: toolkit.StateSuccess,
			Content: []toolkit.Block{{Type: toolkit.BlockText, Text: text},
				{Type: toolkit.BlockText, Text: "[toolbus] This session's stateful tools moved from worker a, which is gone, to worker b: files and other state from earlier calls may be missing."}},
			Metadata: map[string]any{wire.MetaSessionMovedFrom: "a", wire.MetaSessionWorker: "b"}}
	}
	if o := checkText(withoutMovedNote(moved("hi")), "", "hi"); o.code != "" {
		t.Errorf("a moved session's call: %q", o.code)
	}
	if o := checkText(withoutMovedNote(moved("ho")), "", "hi"); o.code != errBadContent {
		t.Errorf("a moved session's call with other text: %q", o.code)
	}
	notMoved := moved("hi")
	delete(notMoved.Metadata, wire.MetaSessionMovedFrom)
	if o := checkText(withoutMovedNote(notMoved), "", "hi"); o.code != errBadContent {
		t.Errorf("two blocks without a move: %q", o.code)
	}
}
