package bus

import (
	"context"
	"log/slog"
	"strings"
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

// panickyLog is a slog handler that panics on every record.
type panickyLog struct{ slog.Handler }

func (panickyLog) Enabled(context.Context, slog.Level) bool  { return true }
func (panickyLog) Handle(context.Context, slog.Record) error { panic("the log broke") }

// TestSpanOfCallPanickedPastToolkit: a panic that escapes the toolkit's
// recovery (here its logger's, while it logged the tool's panic) and that
// the worker recovers (sender.serve) is recorded on the call's span as an
// exception event with the error status, as one the toolkit recovers is:
// the span had the error status only.
func TestSpanOfCallPanickedPastToolkit(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec, tp := spanRecorder()
	tk := toolkit.New(&toolkit.Options{Logger: slog.New(panickyLog{})})
	if err := tk.Add(toolkit.Func("panicky", "Panics.", func(context.Context, struct {
		Text string `json:"text"`
	}) (string, error) {
		panic("the tool broke")
	})); err != nil {
		t.Fatal(err)
	}
	w, err := Serve(natstest.Connect(t, s), tk, &WorkerOptions{AnnounceInterval: -1, Tracer: tp.Tracer("worker")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	nc := natstest.Connect(t, s)
	if r := rawFinal(t, nc, wire.CallSubject("panicky", ""), nil, echoRequest(t, "p1", "")); r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "the log broke") {
		t.Fatalf("panicky: %+v", r)
	}
	natstest.WaitFor(t, "the span of p1", func() bool { return len(rec.Ended()) > 0 })
	sp := rec.Ended()[0]
	var msg string
	for _, ev := range sp.Events() {
		if ev.Name == "exception" {
			for _, a := range ev.Attributes {
				if a.Key == "exception.message" {
					msg = a.Value.Emit()
				}
			}
		}
	}
	if msg != "the log broke" || sp.Status().Code != codes.Error {
		t.Errorf("the span of a call whose panic the worker recovered: exception.message %q, status %v; want the log's panic, the error status", msg, sp.Status())
	}
}
