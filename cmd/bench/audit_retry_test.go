package main

import (
	"maps"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/toolkit"
)

// TestAuditorRetriedCall: a call the client sent again after a lost
// attempt travels under the attempt's id (<id>-r2); its final there is
// the call's. The auditor knew only the first id, so a call retried to
// success was counted wire_no_final (seen under kills with --audit);
// two finals or a gap within an attempt are still counted, and a call
// none of whose attempts had a final is still wire_no_final.
func TestAuditorRetriedCall(t *testing.T) {
	s, err := embedded.Start(&embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	connect := func() *nats.Conn {
		nc, err := s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	prefix := newInboxPrefix()
	a, err := newAuditor(connect(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	pub := connect()
	send := func(id string, seq uint64, kind wire.Kind) {
		t.Helper()
		f := &wire.Frame{Kind: kind, ID: id, Seq: seq}
		switch kind {
		case wire.KindFinal:
			f.Final = &toolkit.Response{ID: id, State: toolkit.StateSuccess}
		case wire.KindChunk:
			f.Chunk = &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}}
		}
		data, err := wire.Msgpack.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.Publish(prefix+".abc."+id, data); err != nil {
			t.Fatal(err)
		}
	}
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
	pub.Flush()
	got := a.settle()
	want := map[string]int64{errWireNoFinal: 1, errWireDupFinal: 1, errWireSeqGap: 1}
	if !maps.Equal(got, want) {
		t.Errorf("audit %v, want %v", got, want)
	}
}
