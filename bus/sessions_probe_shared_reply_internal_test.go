package bus

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestProbesOfCallsSharingAReplySubject: a caller may send several calls
// on one reply subject (its frames name their call), two of one session
// among them, passed on by other workers. This worker answered both
// probes, then began to stop: the first call's coming ended its wait for
// the second too, and tools.pinned.<instance>.> drained before the second
// came, which then reached no one. Each probe is waited for.
func TestProbesOfCallsSharingAReplySubject(t *testing.T) {
	a := &affinity{probe: time.Second}
	const reply = "_INBOX.me"
	a.probed(&nats.Msg{Data: []byte(reply)})
	a.probed(&nats.Msg{Data: []byte(reply)})
	a.stop()
	a.arrived(reply)
	if !a.waitingForwards() {
		t.Fatal("the stop waits for no call once the first of two probed for has come")
	}
	a.arrived(reply)
	if a.waitingForwards() {
		t.Fatal("the stop waits for a call once both probed for have come")
	}
}
