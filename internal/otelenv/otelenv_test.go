package otelenv

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
)

// TestOffWithoutVariables: without an OTLP endpoint in the environment
// (or with traces turned off) Setup sets nothing up: no tracer, the
// global provider untouched.
func TestOffWithoutVariables(t *testing.T) {
	for _, env := range [][2]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", ""},
		{"OTEL_SDK_DISABLED", "true"},
		{"OTEL_TRACES_EXPORTER", "none"},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
		t.Setenv(env[0], env[1])
		before := otel.GetTracerProvider()
		tracer, shutdown, err := Setup(context.Background(), "test", "test", "v0")
		if err != nil || tracer != nil || otel.GetTracerProvider() != before {
			t.Errorf("%s=%q: tracer %v, err %v, provider changed %v", env[0], env[1], tracer, err, otel.GetTracerProvider() != before)
		}
		if err := shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

// TestUnsupportedExporter: a protocol or exporter toolbus does not speak
// is an error at start, not silence.
func TestUnsupportedExporter(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, _, err := Setup(context.Background(), "test", "test", "v0"); err == nil {
		t.Fatal("OTEL_EXPORTER_OTLP_PROTOCOL=grpc accepted")
	}
}
