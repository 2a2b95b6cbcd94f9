package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCallerTraceStateKeepsMCPSession: a caller on the bus whose request
// carried a tracestate of 32 long members (16 KB, as W3C allows) had it
// sent on, whole, in the HTTP request of its call to a mounted
// Streamable HTTP server; server-everything (Node, 16 KiB of headers)
// answered 431, which the go-sdk takes for a broken connection: that
// call failed, and so did another caller's call running on the same MCP
// session. The worker keeps at most callspan.MaxTraceState bytes of the
// caller's tracestate, so both calls succeed.
func TestCallerTraceStateKeepsMCPSession(t *testing.T) {
	tk, _ := mount(t, ServerConfig{Name: "ev", Transport: TransportStreamableHTTP, URL: startEverythingHTTP(t, "streamableHttp") + "/mcp"})
	s := natstest.Embedded(t, false)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(testCtx(t)) })
	bc, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	ctx := testCtx(t)

	// Another caller's call, running on the server's session.
	running := make(chan struct{})
	other := make(chan *toolkit.Response, 1)
	go func() {
		var final *toolkit.Response
		running := running
		for ev := range bc.Call(ctx, toolkit.ToolCall{Name: "mcp__ev__trigger-long-running-operation", Input: map[string]any{"duration": 2, "steps": 4}}) {
			if ev.Progress != nil && running != nil {
				close(running)
				running = nil
			}
			if ev.Final != nil {
				final = ev.Final
			}
		}
		other <- final
	}()
	select {
	case <-running:
	case r := <-other:
		t.Fatalf("the long call ended before its first progress: %+v", r)
	}

	var members []string
	for i := range 32 {
		members = append(members, fmt.Sprintf("k%03d%s=%s", i, strings.Repeat("a", 252), strings.Repeat("v", 256)))
	}
	ts, err := trace.ParseTraceState(strings.Join(members, ","))
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{7}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	if r := bc.Invoke(trace.ContextWithRemoteSpanContext(ctx, sc), toolkit.ToolCall{Name: "mcp__ev__echo", Input: map[string]any{"message": "hi"}}); r.State != toolkit.StateSuccess {
		t.Errorf("the call with a tracestate of %d bytes: %s %s %.300s", len(ts.String()), r.State, r.Code, r.Text())
	}
	if r := <-other; r == nil || r.State != toolkit.StateSuccess {
		t.Errorf("the other caller's call: %+v", r)
	}
}

// TestGatewayBoundsCallerTraceState: the gateway continued a tools/call's
// trace with the whole tracestate its MCP client sent (16 KB in _meta or
// a header), on its span and on to the fleet and the servers it mounts;
// it keeps at most callspan.MaxTraceState bytes of it, in the same trace.
func TestGatewayBoundsCallerTraceState(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	if err := tk.Add(toolkit.Func("echo", "Echo the text back.", func(ctx context.Context, in textIn) (string, error) { return in.Text, nil })); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Connect(t, srv), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	rec, tp := spanRecorder()
	g := startGateway(t, srv, &GatewayOptions{Tracer: tp.Tracer("gateway")})
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})

	const traceID, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	members := []string{"short=1"}
	for i := range 31 {
		members = append(members, fmt.Sprintf("k%03d%s=%s", i, strings.Repeat("a", 252), strings.Repeat("v", 256)))
	}
	if _, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"},
		Meta: sdk.Meta{"traceparent": "00-" + traceID + "-" + parent + "-01", "tracestate": strings.Join(members, ",")}}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the gateway's span", func() bool { return len(rec.Ended()) > 0 })
	sp := rec.Ended()[0]
	if got := sp.SpanContext().TraceState().String(); got != "short=1" {
		t.Errorf("the gateway's span carries a tracestate of %d bytes (%.60q…), want the caller's cut to %q", len(got), got, "short=1")
	}
	if sp.SpanContext().TraceID().String() != traceID || sp.Parent().SpanID().String() != parent {
		t.Errorf("the gateway's span: trace %s, parent %s; want %s, %s", sp.SpanContext().TraceID(), sp.Parent().SpanID(), traceID, parent)
	}
}
