package mcp

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestStructuredOnlyResultReachesTheModel: a tool result with only
// structuredContent gives the model its JSON as text (the metadata keeps
// the structure); one that has content is left as it is.
func TestStructuredOnlyResultReachesTheModel(t *testing.T) {
	sc := map[string]any{"temperature": 21.5, "conditions": "sunny"}
	c := resultChunk(&sdk.CallToolResult{StructuredContent: sc})
	if len(c.Content) != 1 || c.Content[0].Type != toolkit.BlockText || c.Content[0].Text != `{"conditions":"sunny","temperature":21.5}` {
		t.Fatalf("structured only: %+v", c.Content)
	}
	if got, ok := c.Metadata["structured_content"].(map[string]any); !ok || got["temperature"] != 21.5 {
		t.Fatalf("metadata: %v", c.Metadata)
	}
	c = resultChunk(&sdk.CallToolResult{StructuredContent: sc, Content: []sdk.Content{&sdk.TextContent{Text: "21.5 and sunny"}}})
	if len(c.Content) != 1 || c.Content[0].Text != "21.5 and sunny" {
		t.Fatalf("with a text mirror: %+v", c.Content)
	}
	c = resultChunk(&sdk.CallToolResult{StructuredContent: sc, Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1}}}})
	if len(c.Content) != 1 || c.Content[0].Type != toolkit.BlockData {
		t.Fatalf("with an image: %+v", c.Content)
	}
}
