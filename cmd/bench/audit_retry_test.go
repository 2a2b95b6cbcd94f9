package main

import (
	"maps"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
)

// TestAuditorRetriedCall: a call the client sent again after a lost
// attempt travels under the attempt's id (<id>-r2); its final there is
// the call's. The auditor knew only the first id, so a call retried to
// success was counted wire_no_final (seen under kills with --audit);
// two finals or a gap within an attempt are still counted, and a call
// none of whose attempts had a final is still wire_no_final.
func TestAuditorRetriedCall(t *testing.T) {
	h := startHandReplies(t)
	a, send := h.a, h.send
	for _, id := range []string{"retried", "late", "twice", "gap", "lost"} {
		a.expect(id)
	}
	send("retried", 1, wire.KindChunk) // its worker died then
	send("retried-r2", 1, wire.KindFinal)
	send("late", 1, wire.KindFinal) // the lost attempt's final, after all
	send("late-r2", 1, wire.KindFinal)
	send("twice-r2", 1, wire.KindFinal)
	send("twice-r2", 2, wire.KindFinal)
	send("gap-r3", 1, wire.KindChunk)
	send("gap-r3", 3, wire.KindFinal)
	send("lost-r2", 1, wire.KindChunk)
	send("stranger-r2", 1, wire.KindFinal)
	h.pub.Flush()
	got := a.settle()
	want := map[string]int64{errWireNoFinal: 1, errWireDupFinal: 1, errWireSeqGap: 1}
	if !maps.Equal(got, want) {
		t.Errorf("audit %v, want %v", got, want)
	}
}
