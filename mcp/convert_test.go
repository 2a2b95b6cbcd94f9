package mcp

import (
	"strings"
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

// TestEmbeddedResourceRoundTrip: a mounted server's embedded text resource
// reaches the model as AgentScope shows it (a text block of its JSON) and
// an MCP client of the gateway as the resource again; a text block that
// merely looks like one stays text.
func TestEmbeddedResourceRoundTrip(t *testing.T) {
	res := &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://doc", MIMEType: "text/markdown", Text: "# Doc\n"}}
	b := contentBlock(res)
	if b.Type != toolkit.BlockText || !strings.Contains(b.Text, `"uri": "test://doc"`) {
		t.Fatalf("block %+v", b)
	}
	got, ok := blockContent("c1", 0, b).(*sdk.EmbeddedResource)
	if !ok || got.Resource.URI != "test://doc" || got.Resource.MIMEType != "text/markdown" || got.Resource.Text != "# Doc\n" {
		t.Fatalf("back: %#v", blockContent("c1", 0, b))
	}
	for name, forged := range map[string]toolkit.Block{
		"no name":       {Type: toolkit.BlockText, Text: b.Text},
		"other uri":     {Type: toolkit.BlockText, Text: b.Text, Name: "test://other"},
		"extra field":   {Type: toolkit.BlockText, Text: `{"uri":"test://doc","text":"x","more":1}`, Name: "test://doc"},
		"trailing text": {Type: toolkit.BlockText, Text: `{"uri":"test://doc","text":"x"} and more`, Name: "test://doc"},
	} {
		if _, ok := blockContent("c1", 0, forged).(*sdk.TextContent); !ok {
			t.Errorf("%s: became %#v", name, blockContent("c1", 0, forged))
		}
	}
}

// TestEmbeddedTextAsAgentScopeShowsIt: an embedded text resource is the
// text of pydantic's model_dump_json(indent=2) of it, as AgentScope gives
// it to the model: uri, mimeType, meta and text, a missing one as null,
// nothing escaped that JSON need not escape. It still converts back.
func TestEmbeddedTextAsAgentScopeShowsIt(t *testing.T) {
	tests := []struct {
		res  *sdk.ResourceContents
		want string
	}{
		{&sdk.ResourceContents{URI: "file://tmp.txt/", MIMEType: "text/plain", Text: "test content"},
			"{\n  \"uri\": \"file://tmp.txt/\",\n  \"mimeType\": \"text/plain\",\n  \"meta\": null,\n  \"text\": \"test content\"\n}"},
		{&sdk.ResourceContents{URI: "test://doc", Text: "a <b> & c", Meta: sdk.Meta{"k": "v"}},
			"{\n  \"uri\": \"test://doc\",\n  \"mimeType\": null,\n  \"meta\": {\n    \"k\": \"v\"\n  },\n  \"text\": \"a <b> & c\"\n}"},
	}
	for _, tt := range tests {
		b := contentBlock(&sdk.EmbeddedResource{Resource: tt.res})
		if b.Type != toolkit.BlockText || b.Text != tt.want {
			t.Errorf("block text = %q\nwant %q", b.Text, tt.want)
		}
		got, ok := blockContent("c1", 0, b).(*sdk.EmbeddedResource)
		if !ok || got.Resource.URI != tt.res.URI || got.Resource.MIMEType != tt.res.MIMEType || got.Resource.Text != tt.res.Text || len(got.Resource.Meta) != len(tt.res.Meta) {
			t.Errorf("back: %#v", blockContent("c1", 0, b))
		}
	}
}

// TestResourceLinkRoundTrip: the text block a resource link becomes gives
// the gateway that link back, whatever its parts hold; any other text
// named by a URI stays text.
func TestResourceLinkRoundTrip(t *testing.T) {
	size := int64(42)
	for _, l := range []*sdk.ResourceLink{
		{URI: "file:///a"},
		{URI: "file:///big.csv", Name: "big.csv", MIMEType: "text/csv", Size: &size},
		{URI: "https://x/y z", Name: "a; title: b", Title: "t (x)", Description: "one; two\nthree)", MIMEType: "text/plain"},
		{URI: "file:///s", Description: "size: 3 bytes"},
	} {
		b := contentBlock(l)
		got, ok := resourceLink(b)
		if !ok || resourceLinkText(got) != b.Text || got.URI != l.URI {
			t.Errorf("%+v: got %+v, %v", l, got, ok)
		}
	}
	for _, b := range []toolkit.Block{
		{Type: toolkit.BlockText, Text: "[resource link] file:///a\n", Name: "file:///b"},
		{Type: toolkit.BlockText, Text: "[resource link] file:///a (size: many bytes)\n", Name: "file:///a"},
		{Type: toolkit.BlockText, Text: "[resource link] file:///a (colour: red)\n", Name: "file:///a"},
		{Type: toolkit.BlockText, Text: "[resource link] file:///a and more", Name: "file:///a"},
		{Type: toolkit.BlockText, Text: "[resource link] file:///a\n"},
	} {
		if got, ok := resourceLink(b); ok {
			t.Errorf("%q named %q: read as the link %+v", b.Text, b.Name, got)
		}
	}
}

// TestContentLayout: a result whose text, links and embedded text would
// merge keeps its content for the gateway, which gives it back only while
// the final's content is still what that content became.
func TestContentLayout(t *testing.T) {
	content := []sdk.Content{
		&sdk.TextContent{Text: "Here are 2 links:"},
		&sdk.ResourceLink{URI: "demo://a", Name: "a"},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "demo://b", MIMEType: "text/plain", Text: "b"}},
	}
	c := resultChunk(&sdk.CallToolResult{Content: content})
	var acc toolkit.Accumulator
	if err := acc.Add(&c); err != nil {
		t.Fatal(err)
	}
	r := acc.Response("call")
	if len(r.Content) != 1 || r.Metadata[metaMCPContent] == nil {
		t.Fatalf("accumulated %+v: want one text and the layout", r)
	}
	got, ok := mcpContent(r)
	if !ok || len(got) != 3 {
		t.Fatalf("mcpContent = %v, %v", got, ok)
	}
	if l, ok := got[1].(*sdk.ResourceLink); !ok || l.URI != "demo://a" {
		t.Errorf("content[1] = %#v", got[1])
	}
	r.Content[0].Text += " [redacted by a middleware]"
	if got, ok := mcpContent(r); ok {
		t.Errorf("a changed final gave back %v", got)
	}
	// Nothing to merge: no layout.
	c = resultChunk(&sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "demo://a"}, &sdk.ImageContent{Data: pngBytes, MIMEType: "image/png"}}})
	if c.Metadata[metaMCPContent] != nil {
		t.Errorf("layout kept for content that does not merge: %v", c.Metadata)
	}
}
