package bus

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSpanOfDeniedCall: the execute_tool span of a call a policy denied
// says how it ended, error.type its code ("denied"), without the error
// status (a denial is no failure: internal/callspan's rule, which the
// gateway's and the MCP client's spans follow too). It had neither.
func TestSpanOfDeniedCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec, tp := spanRecorder()
	deny := toolkit.Func("deny", "Denied.", func(context.Context, struct {
		Text string `json:"text"`
	}) (string, error) {
		return "", &toolkit.Error{Code: toolkit.CodeDenied, Message: "PermissionDenied: no."}
	})
	serveEcho(t, s, WorkerOptions{Tracer: tp.Tracer("worker")}, deny)
	nc := natstest.Connect(t, s)
	if r := rawFinal(t, nc, wire.CallSubject("deny", ""), nil, echoRequest(t, "d1", "")); r.State != toolkit.StateDenied {
		t.Fatalf("deny: %+v", r)
	}
	natstest.WaitFor(t, "the span of d1", func() bool { return len(rec.Ended()) > 0 })
	sp := rec.Ended()[0]
	if a := spanAttrs(sp); a["error.type"] != string(toolkit.CodeDenied) || sp.Status().Code == codes.Error {
		t.Errorf("the denied call's span: error.type %q, status %v; want denied, not the error status", a["error.type"], sp.Status())
	}
}
