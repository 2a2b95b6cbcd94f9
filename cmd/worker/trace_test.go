package main_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps what it gets.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []*tracepb.Span
	names map[string]string // service.name of each span, by span name
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{names: map[string]string{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var export coltracepb.ExportTraceServiceRequest
		if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &export) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					r.spans = append(r.spans, sp)
					r.names[sp.Name] = service
				}
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(b)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	r.url = "http://" + l.Addr().String()
	return r
}

func (r *otlpReceiver) span(name string) *tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sp := range r.spans {
		if sp.Name == name {
			return sp
		}
	}
	return nil
}

// TestTracesExported: with OTEL_EXPORTER_OTLP_ENDPOINT set, the worker
// exports a span per call in the caller's trace ("execute_tool <tool>")
// and, for an MCP tool, a child "tools/call <tool>" whose context reaches
// the HTTP MCP server in traceparent.
func TestTracesExported(t *testing.T) {
	rcv := startOTLPReceiver(t)
	peer := startHeaderPeer(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.url)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SERVICE_NAME", "worker-under-test")
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, fmt.Sprintf("mcp_servers:\n  - name: api\n    url: %s\n", peer.url))
	w := startWorker(t, "--config", cfg)

	c, err := bus.NewClient(natstest.URLConn(t, w.url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	traceID, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	parentID, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: parentID, TraceFlags: trace.FlagsSampled, Remote: true})), guard)
	defer cancel()
	r := c.Invoke(ctx, toolkit.ToolCall{Name: "mcp__api__traceparent"})
	if r.State != toolkit.StateSuccess || !strings.HasPrefix(r.Text(), "00-"+traceID.String()+"-") {
		t.Fatalf("the MCP server saw traceparent %q (%+v), want the caller's trace %s", r.Text(), r, traceID)
	}

	var call, mcpCall *tracepb.Span
	deadline := time.Now().Add(guard)
	for call == nil || mcpCall == nil {
		if time.Now().After(deadline) {
			t.Fatalf("spans not exported: %v", rcv.names)
		}
		time.Sleep(20 * time.Millisecond)
		call, mcpCall = rcv.span("execute_tool mcp__api__traceparent"), rcv.span("tools/call traceparent")
	}
	if trace.TraceID(call.TraceId) != traceID || trace.SpanID(call.ParentSpanId) != parentID {
		t.Errorf("execute_tool span: trace %x parent %x, want %s %s", call.TraceId, call.ParentSpanId, traceID, parentID)
	}
	if trace.SpanID(mcpCall.ParentSpanId) != trace.SpanID(call.SpanId) {
		t.Errorf("tools/call span's parent %x, want the execute_tool span %x", mcpCall.ParentSpanId, call.SpanId)
	}
	if want := fmt.Sprintf("00-%s-%x-01", traceID, mcpCall.SpanId); r.Text() != want {
		t.Errorf("traceparent at the MCP server %q, want %q (the tools/call span)", r.Text(), want)
	}
	attrs := map[string]string{}
	for _, a := range call.Attributes {
		attrs[a.Key] = a.GetValue().GetStringValue()
	}
	if attrs["gen_ai.tool.name"] != "mcp__api__traceparent" || attrs["gen_ai.operation.name"] != "execute_tool" || attrs["gen_ai.tool.call.id"] != r.ID {
		t.Errorf("execute_tool attributes: %v", attrs)
	}
	rcv.mu.Lock()
	service := rcv.names[call.Name]
	rcv.mu.Unlock()
	if service != "worker-under-test" {
		t.Errorf("service.name = %q", service)
	}
}
