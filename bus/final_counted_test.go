package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestFinalCountedAsSent: a call whose output or final the worker could
// not send ends with an internal final, and that is what OnFinal (the
// worker's calls metric) and the call's span report, not the tool's own
// success or failure, which its caller never got.
func TestFinalCountedAsSent(t *testing.T) {
	partial := strings.Repeat("p", 40<<10)
	big := strings.Repeat("m", 400<<10)
	tools := []toolkit.Handler{
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"f": func() {}}})
		},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			w.Write(toolkit.Text(partial)) // streaming from here
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"f": make(chan int)}})
		},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return &toolkit.Error{Code: toolkit.CodeToolError, Message: "failed", Metadata: map[string]any{"a": big, "b": big, "c": big}}
		},
	}
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	for i, h := range tools {
		mustAdd(t, tk, toolkit.Raw(fmt.Sprint("t", i), "Fails to send.", nil, h))
	}
	type end struct {
		state toolkit.State
		code  toolkit.Code
	}
	var mu sync.Mutex
	finals := map[string]end{}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker"),
		OnFinal: func(tool string, state toolkit.State, code toolkit.Code, _ time.Duration) {
			mu.Lock()
			finals[tool] = end{state, code}
			mu.Unlock()
		}})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: guard})
	for i := range tools {
		name := fmt.Sprint("t", i)
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: name})
		if r.Code != toolkit.CodeInternal {
			t.Fatalf("%s: final = %s %s, want internal", name, r.State, r.Code)
		}
		mu.Lock()
		got := finals[name]
		mu.Unlock()
		if got != (end{toolkit.StateError, toolkit.CodeInternal}) {
			t.Errorf("%s: OnFinal heard %s %q; the caller got error internal", name, got.state, got.code)
		}
	}
	natstest.WaitFor(t, "every call's span ended", func() bool { return len(rec.Ended()) == len(tools) })
	for _, sp := range rec.Ended() {
		var typ string
		for _, a := range sp.Attributes() {
			if a.Key == "error.type" {
				typ = a.Value.Emit()
			}
		}
		if sp.Status().Code != codes.Error || typ != string(toolkit.CodeInternal) {
			t.Errorf("%s: span status %v, error.type %q; the caller got error internal", sp.Name(), sp.Status(), typ)
		}
	}
}

// TestFinalCountedAsSentJSON: a JSON caller's frames carry a
// Content-Type header, which the server counts against max_payload with
// the body. A final whose body fits but not with that header cannot go
// out, and neither can its content-less form: the caller gets internal,
// and so must OnFinal hear.
func TestFinalCountedAsSentJSON(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("pad", "Fails with metadata of n bytes.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		n, _ := call.Input["n"].(float64)
		return &toolkit.Error{Code: toolkit.CodeToolError, Message: "f", Metadata: map[string]any{"p": strings.Repeat("m", int(n))}}
	}))
	var mu sync.Mutex
	var heard toolkit.Code
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{OnFinal: func(_ string, _ toolkit.State, code toolkit.Code, _ time.Duration) {
		mu.Lock()
		heard = code
		mu.Unlock()
	}})
	nc := natstest.Connect(t, s)
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	// call sends a JSON call and returns its final and the final's size.
	call := func(id string, n int) (*wire.Frame, int) {
		t.Helper()
		body := fmt.Sprintf(`{"id":%q,"input":{"n":%d}}`, id, n)
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("pad", ""), Reply: inbox,
			Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}, Data: []byte(body)}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := sub.NextMsg(guard)
			if err != nil {
				t.Fatal(err)
			}
			var f wire.Frame
			if err := wire.JSON.Unmarshal(m.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Kind == wire.KindFinal {
				return &f, len(m.Data)
			}
		}
	}
	const small = 10
	_, size := call("c0", small) // one message, the whole final
	// The whole final's body 5 bytes under max_payload: it fits, and its
	// content-less form too, but neither with the header.
	n := small + int(nc.MaxPayload()) - size - 5
	f, _ := call("c1", n)
	mu.Lock()
	got := heard
	mu.Unlock()
	if got != f.Final.Code {
		t.Fatalf("the caller got %s %s; OnFinal heard %q", f.Final.State, f.Final.Code, got)
	}
}
