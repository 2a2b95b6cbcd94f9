// Package conformance is the MCP conformance suite's fixture tool set
// (npm @modelcontextprotocol/conformance, the server scenarios'
// tools-call-*: test_simple_text, test_image_content, …) written as
// toolbus tools, so that a worker serves them and the suite runs against
// the MCP gateway in front of the fleet: what the suite checks then
// crosses the bus both ways (content blocks, log messages, progress,
// sampling and elicitation requests to the caller). The texts follow the
// go-sdk's conformance everything-server.
package conformance

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// The fixture's image (a 1×1 PNG) and audio (a tiny WAV), base64.
const (
	imagePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	audioWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// textResource is an embedded text resource: a data block of a text
// media type named by its URI (the gateway sends it as a text resource).
func textResource(uri, text string) toolkit.Block {
	return toolkit.Block{Type: toolkit.BlockData, MediaType: "text/plain", Name: uri, Data: b64(text)}
}

// Tools returns the fixture's tools.
func Tools() []*toolkit.Tool {
	none := func(name, desc string, fn func(ctx context.Context, w toolkit.Writer) error) *toolkit.Tool {
		return toolkit.Stream(name, desc, func(ctx context.Context, _ struct{}, w toolkit.Writer) error { return fn(ctx, w) })
	}
	return []*toolkit.Tool{
		none("test_simple_text", "Returns simple text content.", func(ctx context.Context, w toolkit.Writer) error {
			return w.Write(toolkit.Text("This is a simple text response for testing."))
		}),
		none("test_image_content", "Returns image content.", func(ctx context.Context, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, MediaType: "image/png", Data: imagePNG}}})
		}),
		none("test_audio_content", "Returns audio content.", func(ctx context.Context, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, MediaType: "audio/wav", Data: audioWAV}}})
		}),
		none("test_embedded_resource", "Returns an embedded resource.", func(ctx context.Context, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{textResource("test://embedded-resource", "This is an embedded resource")}})
		}),
		none("test_multiple_content_types", "Returns text, an image and a resource.", func(ctx context.Context, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{
				{Type: toolkit.BlockText, Text: "This is text content"},
				{Type: toolkit.BlockData, MediaType: "image/png", Data: imagePNG},
				textResource("test://embedded-in-multiple", "This is an embedded resource"),
			}})
		}),
		none("test_tool_with_logging", "Logs three messages while it runs.", func(ctx context.Context, w toolkit.Writer) error {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				if err := toolkit.Log(w, toolkit.LogMessage{Level: "info", Data: msg}); err != nil {
					return err
				}
			}
			return w.Write(toolkit.Text("Tool with logging executed successfully"))
		}),
		none("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.", func(ctx context.Context, w toolkit.Writer) error {
			for _, p := range []float64{0, 50, 100} {
				if err := w.Progress(toolkit.Progress{Progress: p, Total: 100, Message: fmt.Sprintf("Completed step %.0f of 100", p)}); err != nil {
					return err
				}
				time.Sleep(50 * time.Millisecond)
			}
			return w.Write(toolkit.Text("progress reported"))
		}),
		none("test_error_handling", "Always fails.", func(ctx context.Context, w toolkit.Writer) error {
			return errors.New("this tool intentionally returns an error for testing")
		}),
		toolkit.Stream("test_sampling", "Asks the caller's model for a completion.", func(ctx context.Context, in struct {
			Prompt string `json:"prompt" jsonschema:"The prompt to send to the LLM"`
		}, w toolkit.Writer) error {
			res, err := toolkit.Ask(ctx, w, toolkit.MethodSample, map[string]any{
				"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": in.Prompt}}},
				"maxTokens": 100,
			})
			if err != nil {
				return fmt.Errorf("sampling failed: %w", err)
			}
			text := "(non-text response)"
			if m, ok := res.(map[string]any); ok {
				if c, ok := m["content"].(map[string]any); ok && c["type"] == "text" {
					text, _ = c["text"].(string)
				}
			}
			return w.Write(toolkit.Text("LLM response: " + text))
		}),
		toolkit.Stream("test_elicitation", "Asks the person for a username.", func(ctx context.Context, in struct {
			Message string `json:"message" jsonschema:"The message to show the user"`
		}, w toolkit.Writer) error {
			return elicit(ctx, w, in.Message, map[string]any{"type": "object", "required": []any{"username"},
				"properties": map[string]any{"username": map[string]any{"type": "string", "description": "Your preferred username"}}})
		}),
		none("test_elicitation_sep1034_defaults", "Asks with defaults for every primitive type.", func(ctx context.Context, w toolkit.Writer) error {
			return elicit(ctx, w, "Test defaults for primitives", map[string]any{"type": "object", "properties": map[string]any{
				"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
				"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
				"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
				"status":   map[string]any{"type": "string", "description": "User status", "enum": []any{"active", "inactive", "pending"}, "default": "active"},
				"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
			}})
		}),
		none("test_elicitation_sep1330_enums", "Asks with every kind of enum.", func(ctx context.Context, w toolkit.Writer) error {
			titled := []any{map[string]any{"const": "value1", "title": "First Option"}, map[string]any{"const": "value2", "title": "Second Option"},
				map[string]any{"const": "value3", "title": "Third Option"}}
			return elicit(ctx, w, "Test enum schemas", map[string]any{"type": "object", "properties": map[string]any{
				"untitledSingle": map[string]any{"type": "string", "enum": []any{"option1", "option2", "option3"}},
				"titledSingle":   map[string]any{"type": "string", "oneOf": titled},
				"legacyEnum":     map[string]any{"type": "string", "enum": []any{"opt1", "opt2", "opt3"}, "enumNames": []any{"Option One", "Option Two", "Option Three"}},
				"untitledMulti": map[string]any{"type": "array", "minItems": 1, "maxItems": 3,
					"items": map[string]any{"type": "string", "enum": []any{"option1", "option2", "option3"}}},
				"titledMulti": map[string]any{"type": "array", "minItems": 1, "maxItems": 3,
					"items": map[string]any{"type": "string", "anyOf": titled}},
			}})
		}),
	}
}

// elicit asks the caller and reports the answer as the fixture does.
func elicit(ctx context.Context, w toolkit.Writer, message string, schema map[string]any) error {
	res, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{"message": message, "requestedSchema": schema})
	if err != nil {
		return fmt.Errorf("elicitation failed: %w", err)
	}
	m, _ := res.(map[string]any)
	return w.Write(toolkit.Text(fmt.Sprintf("Elicitation result: action=%v, content=%v", m["action"], m["content"])))
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
