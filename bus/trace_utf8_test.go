package bus_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSpansOfInvalidUTF8Exported: a caller chooses strings that a call's
// span carries (its session, its call id when the worker refuses it, the
// tool named by a pinned subject) and a msgpack string or a subject may
// hold bytes that are not UTF-8, which the span kept as they came. OTLP
// carries strings as protobuf strings, which must be UTF-8: the exporter
// failed to encode the whole batch ("string field contains invalid
// UTF-8"), so one such call dropped every other caller's spans exported
// with it. The worker's spans carry such strings with U+FFFD for the
// invalid bytes, and the batch reaches the collector.
func TestSpansOfInvalidUTF8Exported(t *testing.T) {
	var mu sync.Mutex
	var names []string
	collectorSrv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collector.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					names = append(names, sp.Name)
				}
			}
		}
	}))
	t.Cleanup(collectorSrv.Close)
	exp, err := otlptracehttp.New(ctxT(t), otlptracehttp.WithEndpointURL(collectorSrv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	t.Cleanup(func() { tp.Shutdown(ctxT(t)) })

	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	wnc := natstest.Connect(t, s)
	w := serve(t, wnc, tk, &bus.WorkerOptions{Instance: "w1", Tracer: tp.Tracer("worker"), Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, wnc)}})
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}}); r.State != toolkit.StateSuccess {
		t.Fatalf("the other caller's call: %s %s %s", r.State, r.Code, r.Text())
	}

	nc := natstest.Connect(t, s)
	send := func(subject string, req wire.Request) {
		t.Helper()
		body, err := wire.Msgpack.Marshal(&req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.RequestMsg(&nats.Msg{Subject: subject, Data: body}, guard); err != nil {
			t.Fatal(err)
		}
	}
	send("tools.call.echo", wire.Request{ID: "c1", Session: "s\xff\xfe", Input: map[string]any{"text": "a"}}) // a session that is not UTF-8
	send("tools.call.echo", wire.Request{ID: "c\xff2", Input: map[string]any{"text": "b"}})                   // a call id refused
	send(wire.PinnedSubject(w.Instance(), "ec\xffho", ""), wire.Request{ID: "c3", Input: map[string]any{"text": "c"}})
	if err := tp.ForceFlush(ctxT(t)); err != nil {
		t.Errorf("exporting the spans: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(names, "execute_tool echo") {
		t.Errorf("the collector received spans %q; want the other caller's execute_tool echo among them", names)
	}
	if len(names) != 4 {
		t.Errorf("the collector received %d spans (%q), want the 4 calls'", len(names), names)
	}
	for _, n := range names {
		if !utf8.ValidString(n) {
			t.Errorf("span name %q is not UTF-8", n)
		}
	}
}
