// Package callspan holds what every span toolbus records of a tool call
// shares (the worker's execute_tool span, the gateway's tools/call span,
// the MCP client's tools/call span): how a call's end is recorded, how a
// panic is, and the tool's type.
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
	"fmt"
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
		span.SetStatus(codes.Error, Cut(desc, MaxMessage))
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
		attribute.String("exception.message", Cut(text, MaxMessage)),
		attribute.String("exception.stacktrace", string(stack)),
	))
	span.SetStatus(codes.Error, Cut(text, MaxMessage))
}
