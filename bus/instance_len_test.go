package bus_test

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A caller drops an ask naming an answer subject whose instance is over
// toolkit.MaxNameLen bytes (wire.ValidAnswerSubject): a worker with such
// an id would wait on answers that never come, so Serve refuses it.
func TestServeRefusesAnInstanceTooLong(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	if w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: strings.Repeat("w", toolkit.MaxNameLen+1)}); err == nil {
		w.Stop(ctxT(t))
		t.Fatal("served with an instance id over toolkit.MaxNameLen bytes")
	}
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: strings.Repeat("w", toolkit.MaxNameLen)})
}
