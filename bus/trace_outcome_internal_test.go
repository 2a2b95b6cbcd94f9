package bus

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
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

// TestSpanNamesToolTypeAndDescription: a call's execute_tool span carries
// gen_ai.tool.type ("function" for a tool the worker runs, "extension"
// for one it proxies from an MCP server) and gen_ai.tool.description,
// as the GenAI conventions recommend, also when the call is answered
// without running; a span of a tool not served here has neither. They
// were not set.
func TestSpanNamesToolTypeAndDescription(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec, tp := spanRecorder()
	proxied, err := toolkit.Describe(toolkit.Func("proxied", "A tool of an MCP server.", func(context.Context, struct {
		Text string `json:"text"`
	}) (string, error) {
		return "ok", nil
	}), toolkit.WithKind(toolkit.KindMCP))
	if err != nil {
		t.Fatal(err)
	}
	serveEcho(t, s, WorkerOptions{Tracer: tp.Tracer("worker")}, proxied)
	nc := natstest.Connect(t, s)
	rawFinal(t, nc, wire.CallSubject("echo", ""), nil, echoRequest(t, "e1", ""))
	rawFinal(t, nc, wire.CallSubject("proxied", ""), nil, echoRequest(t, "m1", ""))
	rawFinal(t, nc, wire.CallSubject("echo", ""), nats.Header{wire.HeaderTimeout: {"0"}}, echoRequest(t, "e2", ""))
	want := map[string][2]string{"e1": {"function", "Echo."}, "m1": {"extension", "A tool of an MCP server."}, "e2": {"function", "Echo."}}
	natstest.WaitFor(t, "three spans", func() bool { return len(rec.Ended()) >= len(want) })
	for _, sp := range rec.Ended() {
		a := spanAttrs(sp)
		id := a["gen_ai.tool.call.id"]
		if got := [2]string{a["gen_ai.tool.type"], a["gen_ai.tool.description"]}; got != want[id] {
			t.Errorf("the span of %s: gen_ai.tool.type, gen_ai.tool.description %q, want %q", id, got, want[id])
		}
	}
}
