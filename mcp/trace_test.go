package mcp

import (
	"context"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// traceHeader adds a fixed traceparent to every request.
type traceHeader struct{ value string }

func (h traceHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayContinuesTrace: a tools/call that carries a trace (the W3C
// header over HTTP, or traceparent in _meta) continues it over the bus:
// the worker's span of the call is its child.
func TestGatewayContinuesTrace(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	rec, tp := spanRecorder()
	tk := newWorkerToolkit(t, srv)
	if err := tk.Add(toolkit.Func("echo", "Echo the text back.", func(ctx context.Context, in textIn) (string, error) { return in.Text, nil })); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Connect(t, srv), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	g := newGateway(t, &fleetFixture{srv: srv})
	u := serveGatewayHTTP(t, g)

	const (
		traceID = "0af7651916cd43dd8448eb211c80319c"
		viaHTTP = "b7ad6b7169203331"
		viaMeta = "00f067aa0ba902b7"
	)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u,
		HTTPClient: &http.Client{Transport: traceHeader{"00-" + traceID + "-" + viaHTTP + "-01"}}})
	ctx := context.Background()
	if res := callTool(t, ctx, c, "echo", map[string]any{"text": "a"}, nil); resultText(res) != "a" {
		t.Fatalf("echo: %+v", res)
	}
	plain := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u})
	if _, err := plain.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "b"},
		Meta: sdk.Meta{"traceparent": "00-" + traceID + "-" + viaMeta + "-01"}}); err != nil {
		t.Fatal(err)
	}
	parents := map[string]bool{}
	for _, sp := range rec.Ended() {
		if sp.Name() == "execute_tool echo" {
			if sp.SpanContext().TraceID().String() != traceID {
				t.Errorf("a call's span is in trace %s, want %s", sp.SpanContext().TraceID(), traceID)
			}
			parents[sp.Parent().SpanID().String()] = true
		}
	}
	if !parents[viaHTTP] || !parents[viaMeta] || len(parents) != 2 {
		t.Fatalf("the calls' spans have parents %v, want %s (header) and %s (_meta)", parents, viaHTTP, viaMeta)
	}
}
