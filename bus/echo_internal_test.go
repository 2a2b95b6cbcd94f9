package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// spanRecorder is a tracer provider whose ended spans rec holds.
func spanRecorder() (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	return rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
}

// serveEcho serves a toolkit with the tool echo (it returns its input's
// text) and more on s, with opts (announcements off); stopped at the
// test's end.
func serveEcho(t *testing.T, s *embedded.Server, opts WorkerOptions, more ...*toolkit.Tool) *Worker {
	t.Helper()
	tk := toolkit.New(nil)
	echo := toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	for _, tool := range append([]*toolkit.Tool{echo}, more...) {
		if err := tk.Add(tool); err != nil {
			t.Fatal(err)
		}
	}
	opts.AnnounceInterval = -1
	w, err := Serve(natstest.Connect(t, s), tk, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return w
}

// rawFinal sends the request body data to the tool on subject with the
// headers h and returns the final of its lone reply.
func rawFinal(t *testing.T, nc *nats.Conn, subject string, h nats.Header, data []byte) *toolkit.Response {
	t.Helper()
	m, err := nc.RequestMsg(&nats.Msg{Subject: subject, Header: h, Data: data}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil || f.Final == nil {
		t.Fatalf("%v %+v", err, f)
	}
	return f.Final
}

// echoRequest is the body of a call of echo (text "x").
func echoRequest(t *testing.T, id, session string) []byte {
	t.Helper()
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: id, Session: session, Input: map[string]any{"text": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// keepsCancel waits until w keeps the cancel of call id (no identity).
func keepsCancel(t *testing.T, w *Worker, id string) {
	t.Helper()
	natstest.WaitFor(t, "the worker to keep the cancel", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, ok := w.tombs[callKey("", id)]
		return ok
	})
}
