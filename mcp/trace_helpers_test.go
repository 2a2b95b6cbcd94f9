package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbus/toolbus/internal/natstest"
)

// spanRecorder is a tracer provider whose ended spans rec holds.
func spanRecorder() (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	return rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
}

// tracedGateway serves f's fleet through a gateway over HTTP that records
// its spans in rec (opts: more options; its Tracer is set), and connects
// an MCP client to it.
func tracedGateway(t *testing.T, f *fleetFixture, opts GatewayOptions) (*sdktrace.TracerProvider, *tracetest.SpanRecorder, *mcpClient) {
	t.Helper()
	rec, tp := spanRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	opts.Tracer = tp.Tracer("gateway")
	g, err := NewGateway(ctx, natstest.Connect(t, f.srv), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return tp, rec, connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
}

// spanAttrs are a span's attributes as text, by key.
func spanAttrs(sp sdktrace.ReadOnlySpan) map[string]string {
	attrs := map[string]string{}
	for _, a := range sp.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	return attrs
}
