// Package callspan holds what every span toolbus records of a tool call
// shares (the worker's execute_tool span, the gateway's tools/call span,
// the MCP client's tools/call span): how a call's end is recorded, how a
// panic is, the tool's type, and how much of a caller's tracestate a
// trace continued from it keeps (BoundTraceState).
//
// The one rule for a call's end (Outcome), after the final's state and
// code (toolkit.Code.State):
//
//	success      nothing
//	error        error.type = the code (timeout among them), and the error status
//	interrupted  error.type = the code ("interrupted")
//	denied       error.type = the code ("denied", "approval_required")
//
// An interrupted or denied call did not fail: the caller, or a policy,
// ended it, so its span is not marked failed (error rates count failures),
// but error.type still says how it ended, as the OpenTelemetry
// conventions ask for any operation that did not succeed.
package callspan

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Outcome records on span how a call ended: code is the final's code
// ("" for a success), failed whether its state is error; desc is the
// error status's description ("" means the code; cut to MaxMessage).
func Outcome(span trace.Span, code string, failed bool, desc string) {
	if code != "" {
		span.SetAttributes(attribute.String("error.type", code))
	}
	if failed {
		if desc == "" {
			desc = code
		}
		span.SetStatus(codes.Error, Text(desc, MaxMessage))
	}
}

// Values of gen_ai.tool.type (GenAI semantic conventions): a function
// is run by the application that was asked to call it (a toolbus worker
// running its Go tool), an extension calls an external system on the
// agent's behalf (a tool proxied from an MCP server).
const (
	TypeFunction  = "function"
	TypeExtension = "extension"
)

// MaxDescription bounds the gen_ai.tool.description a span carries (a
// tool's description, an MCP server's choice, may be long; each span
// holds it).
const MaxDescription = 1024

// MaxMessage bounds the texts a span carries of how a call ended: the
// error status's description (Outcome) and an exception's message
// (Exception). They may be a tool's panic value or an MCP server's error,
// a megabyte as easily as a line, and a span waits in the exporter's
// queue with thousands of others.
const MaxMessage = 4096

// Text is s as a span carries it: cut to at most n bytes (Cut), each run
// of bytes in it that is not UTF-8 replaced by U+FFFD. OTLP carries a
// span's name and strings as protobuf strings, which must be UTF-8: one
// that is not fails the export of its whole batch ("string field
// contains invalid UTF-8"), every caller's spans with it. A caller's
// msgpack strings and subjects may hold any bytes, so what a caller chose
// goes on a span through Text.
func Text(s string, n int) string {
	s = Cut(s, n)
	if utf8.ValidString(s) {
		return s
	}
	return Cut(strings.ToValidUTF8(s, "\uFFFD"), n)
}

// Cut is s cut to at most n bytes, at the start of a rune.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Exception records a panic recovered while span's call ran, as the
// OpenTelemetry conventions record an operation that ended by an
// exception: an "exception" event with exception.type (the panic value's
// Go type), exception.message (text, cut to MaxMessage) and
// exception.stacktrace (stack, the panicking goroutine's, which Go's
// traceback bounds at 100 frames), and the span's error status. Nothing
// when span is not recording.
func Exception(span trace.Span, v any, text string, stack []byte) {
	if !span.IsRecording() {
		return
	}
	span.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", fmt.Sprintf("%T", v)),
		attribute.String("exception.message", Text(text, MaxMessage)),
		attribute.String("exception.stacktrace", strings.ToValidUTF8(string(stack), "\uFFFD")),
	))
	span.SetStatus(codes.Error, Text(text, MaxMessage))
}

// MaxTraceState bounds the tracestate of a trace continued from a caller
// (BoundTraceState): the 512 bytes W3C Trace Context asks a vendor to pass
// on at least. The caller writes the header, up to 32 members of 513
// bytes; whatever the trace's spans hold, every request a tool makes in
// the trace carries it (an MCP server's HTTP requests, as a tracestate
// header), and 16 KB of it there is more than many HTTP servers take
// (Node's take 16 KiB of headers in all): the server's refusal of one
// call broke the MCP session every caller of its tools shares.
const MaxTraceState = 512

// maxTraceStateMember: members longer than this are the first dropped
// (W3C Trace Context, "Tracestate Limits").
const maxTraceStateMember = 128

// BoundTraceState is ctx, as a propagator's Extract returned it, with the
// tracestate of its span context cut to at most MaxTraceState bytes as
// W3C Trace Context has a vendor cut one: members longer than 128 bytes
// are dropped first, then members from the end. ctx itself when its
// tracestate is within the bound.
func BoundTraceState(ctx context.Context) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	ts := sc.TraceState()
	if ts.Len() == 0 {
		return ctx
	}
	size := -1 // members and the commas between them
	ts.Walk(func(k, v string) bool {
		size += 1 + len(k) + 1 + len(v)
		return true
	})
	if size <= MaxTraceState {
		return ctx
	}
	var kept []string
	size = -1
	ts.Walk(func(k, v string) bool {
		m := len(k) + 1 + len(v)
		if m > maxTraceStateMember {
			return true
		}
		if size+1+m > MaxTraceState {
			return false
		}
		kept = append(kept, k+"="+v)
		size += 1 + m
		return true
	})
	cut, err := trace.ParseTraceState(strings.Join(kept, ","))
	if err != nil { // members of a parsed tracestate: not expected
		cut = trace.TraceState{}
	}
	sc = sc.WithTraceState(cut)
	if sc.IsRemote() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return trace.ContextWithSpanContext(ctx, sc)
}
