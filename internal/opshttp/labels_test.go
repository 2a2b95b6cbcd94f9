package opshttp

import (
	"strconv"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// Tool labels were made for every name the fleet served at some moment
// and never removed, so a fleet renaming tools without end grew the
// metrics without end: past the bound, new names are counted as one.
func TestToolLabelsBounded(t *testing.T) {
	l := NewToolLabels(3)
	for i := range 3 {
		if got := l.Label("t" + strconv.Itoa(i)); got != "t"+strconv.Itoa(i) {
			t.Errorf("label %d: %q", i, got)
		}
	}
	if got := l.Label("t3"); got != OtherTool {
		t.Errorf("the fourth name: %q, want %q", got, OtherTool)
	}
	if got := l.Label("t1"); got != "t1" {
		t.Errorf("a name labelled before the bound: %q", got)
	}
	if n := len(l.seen); n != 3 {
		t.Errorf("%d names kept, want 3", n)
	}
}

// TestOtherToolIsNoToolName: "_other", the label of the names past the
// bound, is a valid tool name, so a tool named _other labelled before the
// bound shared its series with every tool past it. The bucket's label is
// one no tool can have.
func TestOtherToolIsNoToolName(t *testing.T) {
	l := NewToolLabels(1)
	real := l.Label("_other")
	if over := l.Label("t1"); real == over {
		t.Errorf("the tool _other and a tool past the bound are both labelled %q", real)
	}
	if toolkit.ValidToolName(OtherTool) {
		t.Errorf("OtherTool %q is a valid tool name", OtherTool)
	}
}
