package otelenv

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
)

// syncBuffer is a bytes.Buffer that the exporter's goroutine and the test
// may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestExportErrorsLogged: spans that cannot be exported (no collector at
// the endpoint) are said on the process's own log, in its format (one
// JSON record with --log-format json), naming the endpoint, not by the
// OpenTelemetry SDK's default handler as a plain line on stderr.
func TestExportErrorsLogged(t *testing.T) {
	// An endpoint where nothing listens: a free port taken and let go
	// again.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
	before, handler, propagator := otel.GetTracerProvider(), otel.GetErrorHandler(), otel.GetTextMapPropagator()
	t.Cleanup(func() {
		otel.SetTracerProvider(before)
		otel.SetErrorHandler(handler)
		otel.SetTextMapPropagator(propagator)
	})
	var out syncBuffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	tracer, shutdown, err := Setup(context.Background(), "test", "test", "v0", log)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracer.Start(context.Background(), "execute_tool echo")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shutdown(ctx)
	var rec struct {
		Level, Msg, Err, Endpoint string
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("the log has no JSON record of the failed export: %q (%v)", out.String(), err)
	}
	if rec.Level != "WARN" || !strings.Contains(rec.Msg, "traces") || rec.Err == "" || rec.Endpoint != endpoint {
		t.Errorf("record %q: want a warning about traces with the error and endpoint %s", line, endpoint)
	}
}
