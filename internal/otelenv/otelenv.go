// Package otelenv turns tracing on from the standard OpenTelemetry
// environment variables, for toolbus's processes.
//
// Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set and OTEL_TRACES_EXPORTER is
// not "none" (OTEL_SDK_DISABLED=true turns it off too): spans are
// exported over OTLP/HTTP (protobuf) in batches, with the exporter's own
// variables (headers, timeout, compression, OTEL_BSP_* for batching), the
// service named by OTEL_SERVICE_NAME or the process's default, and the
// resource from OTEL_RESOURCE_ATTRIBUTES. Off, nothing is set up and the
// processes record no spans at all.
package otelenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/internal/loglimit"
	"github.com/toolbus/toolbus/internal/urlredact"
)

// Enabled reports whether the environment asks for traces.
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup starts the exporter when Enabled and makes it the global tracer
// provider (with the W3C propagator); the SDK's errors (spans not
// exported) go to log. It returns the provider's tracer
// for scope, and a shutdown that flushes what is buffered; nil, a no-op
// shutdown and no error when tracing is off.
func Setup(ctx context.Context, service, scope, version string, log *slog.Logger) (trace.Tracer, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	if !Enabled() {
		return nil, noop, nil
	}
	if exp := os.Getenv("OTEL_TRACES_EXPORTER"); exp != "" && exp != "otlp" {
		return nil, noop, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: only otlp (over HTTP) or none are supported", exp)
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p == "" {
		if p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
			return nil, noop, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/protobuf is supported", p)
		}
	} else if p != "http/protobuf" {
		return nil, noop, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%s: only http/protobuf is supported", p)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, noop, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := newResource(ctx, service, version)
	if err != nil {
		return nil, noop, fmt.Errorf("OTel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetErrorHandler(errorLog(log))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Tracer(scope), tp.Shutdown, nil
}

// errorLog says the SDK's errors (spans that could not be exported: no
// collector at the endpoint, one refusing them) on the process's log, at
// most a few lines a second, in place of the SDK's default, a plain line
// on stderr outside the log's format and level.
func errorLog(log *slog.Logger) otel.ErrorHandler {
	variable := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpoint := os.Getenv(variable)
	if endpoint == "" {
		variable = "OTEL_EXPORTER_OTLP_ENDPOINT"
		endpoint = os.Getenv(variable)
	}
	msg := "traces: OpenTelemetry reported an error, spans may not be exported: check that an OTLP/HTTP collector answers at the endpoint (" + variable + "; unset it, or set OTEL_TRACES_EXPORTER=none, to turn traces off)"
	var limit loglimit.Limit
	return otel.ErrorHandlerFunc(func(err error) {
		left, ok := limit.Take(5, time.Now())
		if !ok {
			return
		}
		attrs := []any{"err", err, "endpoint", urlredact.URL(endpoint)}
		if left > 0 {
			attrs = append(attrs, "suppressed", left)
		}
		log.Warn(msg, attrs...)
	})
}

// newResource is the SDK's own attributes, then the process's service
// name and version, then the environment's (OTEL_RESOURCE_ATTRIBUTES,
// OTEL_SERVICE_NAME), each over the one before; ours without a schema, so
// nothing conflicts.
func newResource(ctx context.Context, service, version string) (*resource.Resource, error) {
	return resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service), attribute.String("service.version", version)),
		resource.WithFromEnv())
}
