package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// result converts a final response to a CallToolResult (see the package
// doc, section Gateway).
func (s *gatewaySession) result(r *toolkit.Response) *sdk.CallToolResult {
	res := &sdk.CallToolResult{Content: []sdk.Content{}}
	if content, ok := mcpContent(r); ok {
		res.Content = content // a mounted server's, as it sent it
	} else {
		for i, b := range r.Content {
			res.Content = append(res.Content, blockContent(r.ID, i, b))
		}
	}
	state := r.State
	if state == "" && r.Code != "" {
		state = r.Code.State() // a final that gave its code only: the code's state
	}
	res.IsError = state != toolkit.StateSuccess && state != ""
	if lost, ok := r.Metadata[wire.MetaLostChunks]; ok {
		// The model reads the content, not _meta: an incomplete result
		// says so where it is read.
		res.Content = append(res.Content, &sdk.TextContent{Text: fmt.Sprintf(
			"[%v chunks of this result were lost on the way: the output above is incomplete]", lost)})
	}
	meta := sdk.Meta{GatewayMetaState: string(state), GatewayMetaSession: s.id}
	if r.Code != "" {
		meta[GatewayMetaCode] = string(r.Code)
	}
	if res.IsError && len(res.Content) == 0 {
		res.Content = append(res.Content, &sdk.TextContent{Text: fmt.Sprintf("the call ended %s (%s)", r.State, r.Code)})
	}
	md := make(map[string]any, len(r.Metadata))
	for k, v := range r.Metadata {
		if k == metaMCPContent {
			continue
		}
		if k == metaStructuredContent {
			if obj, ok := jsonValue(v).(map[string]any); ok {
				res.StructuredContent = obj
				continue
			}
		}
		md[k] = jsonValue(v)
	}
	if len(md) > 0 {
		meta[GatewayMetaMetadata] = md
	}
	res.Meta = meta
	return res
}

// jsonValue returns v as encoding/json sees it (maps with string keys,
// float64 numbers), or its fmt rendering when it has no JSON form.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Sprint(v)
	}
	return out
}

// blockContent converts one block: text → text (but a mounted server's
// embedded text resource or resource link, as the client converted it, →
// that resource or link again); base64 data → image or audio by media type, text/* (valid
// UTF-8) → an embedded text resource, any other type → an embedded blob
// resource; URL data → a resource link.
func blockContent(callID string, i int, b toolkit.Block) sdk.Content {
	if b.Type != toolkit.BlockData {
		if r, ok := embeddedResource(b); ok {
			return r
		}
		if l, ok := resourceLink(b); ok {
			return l
		}
		return &sdk.TextContent{Text: b.Text}
	}
	if b.Data == "" && b.URL != "" {
		name := b.Name
		if name == "" {
			name = b.URL
		}
		return &sdk.ResourceLink{URI: b.URL, Name: name, MIMEType: b.MediaType}
	}
	raw, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		return &sdk.TextContent{Text: fmt.Sprintf("[data block %q (%s) is not valid base64: %v]", b.Name, b.MediaType, err)}
	}
	switch mediaClass(b.MediaType) {
	case "image":
		return &sdk.ImageContent{Data: raw, MIMEType: b.MediaType}
	case "audio":
		return &sdk.AudioContent{Data: raw, MIMEType: b.MediaType}
	}
	uri := b.Name
	if !hasScheme(uri) {
		id := b.ID
		if id == "" {
			id = fmt.Sprintf("%s-%d", callID, i)
		}
		uri = "toolbus:data/" + id
	}
	if mediaClass(b.MediaType) == "text" && utf8.Valid(raw) { // a text resource, as text
		return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: b.MediaType, Text: string(raw)}}
	}
	return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: b.MediaType, Blob: raw}}
}

func mediaClass(mt string) string {
	for i := 0; i < len(mt); i++ {
		if mt[i] == '/' {
			return mt[:i]
		}
	}
	return ""
}

// hasScheme reports whether s starts with a URI scheme ("x:").
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			return i > 0
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return false
}
