package otelenv

import (
	"context"
	"log/slog"
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
		tracer, shutdown, err := Setup(context.Background(), "test", "test", "v0", slog.Default())
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
	if _, _, err := Setup(context.Background(), "test", "test", "v0", slog.Default()); err == nil {
		t.Fatal("OTEL_EXPORTER_OTLP_PROTOCOL=grpc accepted")
	}
}

// TestResource: the process names itself unless the environment does.
func TestResource(t *testing.T) {
	for _, tt := range []struct{ env, attrs, want string }{
		{"", "", "toolbus-worker"},
		{"mine", "", "mine"},
		{"", "service.name=fromattrs,team=a", "fromattrs"},
	} {
		t.Setenv("OTEL_SERVICE_NAME", tt.env)
		t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tt.attrs)
		res, err := newResource(context.Background(), "toolbus-worker", "v1.2.3")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, kv := range res.Attributes() {
			got[string(kv.Key)] = kv.Value.Emit()
		}
		if got["service.name"] != tt.want || got["service.version"] != "v1.2.3" || got["telemetry.sdk.language"] != "go" {
			t.Errorf("env %q attrs %q: %v", tt.env, tt.attrs, got)
		}
	}
}
