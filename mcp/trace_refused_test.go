package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewaySpanOfRefusedCall: a tools/call the gateway answers itself,
// without sending it to the fleet (arguments that are not an object, a
// session over GatewayOptions.MaxSessionCalls), is recorded as a span as
// a call it sends is ("tools/call <tool>", error.type the final's code,
// the error status), in the caller's trace, and OnCall is told the time
// from the request to its answer, as for any call. Such calls had no span
// and were timed at 0.
func TestGatewaySpanOfRefusedCall(t *testing.T) {
	f := startFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	var mu sync.Mutex
	took := map[toolkit.Code]time.Duration{}
	_, rec, c := tracedGateway(t, f, GatewayOptions{MaxSessionCalls: 1,
		OnCall: func(tool string, state toolkit.State, code toolkit.Code, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			took[code] = d
		}})

	const traceID = "0af7651916cd43dd8448eb211c80319c"
	parents := map[toolkit.Code]string{toolkit.CodeInvalidInput: "b7ad6b7169203331", toolkit.CodeOverloaded: "00f067aa0ba902b7"}
	meta := func(code toolkit.Code) sdk.Meta {
		return sdk.Meta{"traceparent": "00-" + traceID + "-" + parents[code] + "-01"}
	}
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: []any{1}, Meta: meta(toolkit.CodeInvalidInput)})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "InvalidInput") {
		t.Fatalf("echo with arguments that are no object: %+v %q %v", res, resultText(res), err)
	}
	unblock, out := startSlow(t, f, c)
	defer func() { unblock(); <-out }()
	res, err = c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"}, Meta: meta(toolkit.CodeOverloaded)})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "TooManyCallsError") {
		t.Fatalf("echo over the session's bound: %+v %q %v", res, resultText(res), err)
	}

	spans := map[toolkit.Code]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		if sp.SpanKind().String() != "server" || sp.Name() != "tools/call echo" {
			continue
		}
		for _, a := range sp.Attributes() {
			if a.Key == "error.type" {
				spans[toolkit.Code(a.Value.Emit())] = sp
			}
		}
	}
	for code, parent := range parents {
		sp := spans[code]
		if sp == nil {
			t.Errorf("no tools/call echo span with error.type %s among %d spans", code, len(rec.Ended()))
			continue
		}
		if sp.Status().Code != codes.Error {
			t.Errorf("%s: status %v, want error", code, sp.Status())
		}
		if sp.Parent().TraceID().String() != traceID || sp.Parent().SpanID().String() != parent {
			t.Errorf("%s: parent %v, want the caller's span %s", code, sp.Parent(), parent)
		}
		mu.Lock()
		d, ok := took[code]
		mu.Unlock()
		if !ok || d <= 0 {
			t.Errorf("%s: OnCall told %v (%v), want the time from the request to its answer", code, d, ok)
		}
	}
}
