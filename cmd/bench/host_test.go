package main

import (
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/toolbus/toolbus/internal/natstest"
)

// `bench worker --nats URL` against a server without JetStream panicked
// (a nil host stopped on the way out) instead of saying why it could not
// start.
func TestStartHostWithoutJetStream(t *testing.T) {
	bare := natstest.ServerWith(t, func(o *server.Options) { o.JetStream = false })
	h, err := startHost(natstest.Ctx(t), natstest.Conn(t, bare), hostOptions{slots: 1})
	if err == nil {
		h.stop(natstest.Ctx(t))
		t.Fatal("a worker host started without JetStream")
	}
	if !strings.Contains(err.Error(), "no JetStream") {
		t.Errorf("error %q does not say the server lacks JetStream", err)
	}
}
