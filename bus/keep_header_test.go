package bus_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKeepResultHeaderMalformed: Toolbus-Keep-Result is "1" or a call id.
// Any other value (not a token: "yes please", "1.0") is answered
// invalid_input naming the header, as a malformed Toolbus-Timeout is.
// Before, the call ran and its final was not kept, with nothing saying so:
// the caller's later read of the result answered that nothing was kept.
func TestKeepResultHeaderMalformed(t *testing.T) {
	s := natstest.Embedded(t, true)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, natstest.Connect(t, s), tk, nil)
	nc := natstest.Connect(t, s)
	for _, v := range []string{"yes please", "a.b", "1.0"} {
		frames := rawFrames(t, nc, "tools.call.echo", nats.Header{wire.HeaderKeepResult: {v}},
			wire.Request{ID: "k1", Input: map[string]any{"text": "hi"}})
		f := frames[len(frames)-1].Final
		if f.Code != toolkit.CodeInvalidInput || !strings.Contains(f.Text(), wire.HeaderKeepResult) {
			t.Errorf("%s: %q: final %+v", wire.HeaderKeepResult, v, f)
		}
	}
	for _, v := range []string{"1", "k0"} {
		frames := rawFrames(t, nc, "tools.call.echo", nats.Header{wire.HeaderKeepResult: {v}},
			wire.Request{ID: "k2" + v, Input: map[string]any{"text": "hi"}})
		if f := frames[len(frames)-1].Final; f.State != toolkit.StateSuccess {
			t.Errorf("%s: %q: final %+v", wire.HeaderKeepResult, v, f)
		}
	}
}
