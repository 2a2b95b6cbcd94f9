package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/internal/schemagraph"
	"github.com/toolbus/toolbus/toolkit"
)

// ToolName is the toolkit name of an MCP server's tool:
// mcp__{server}__{tool}, where each character of tool outside
// [A-Za-z0-9_-] becomes 'x' (never '_', so it cannot forge a "__"
// separator).
func ToolName(server, tool string) string {
	var b strings.Builder
	b.Grow(len("mcp____") + len(server) + len(tool))
	b.WriteString("mcp__")
	b.WriteString(server)
	b.WriteString("__")
	for _, r := range tool {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('x')
		}
	}
	return b.String()
}

// inputSchema turns a server's input schema into a toolkit schema: a deep
// copy with "type": "object" and "properties" defaulted, titles stripped
// and everything else ($defs, anyOf, …) kept.
func inputSchema(raw any) (map[string]any, error) {
	var m map[string]any
	switch s := raw.(type) {
	case nil:
		m = map[string]any{}
	case map[string]any:
		m = s
	default:
		m = map[string]any{}
	}
	// A JSON round trip is both the deep copy and the normalisation of
	// whatever the SDK decoded.
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	if _, ok := out["type"]; !ok {
		out["type"] = "object"
	}
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	// The toolkit validates every call's input against it: a schema whose
	// references the validator would follow for ever or past bound on one
	// value is refused here, so that the tool is skipped (package
	// schemagraph says why).
	if _, err := schemagraph.Check(out); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	toolkit.StripTitles(out)
	return out, nil
}

// toolOptions maps MCP annotations to registration options. readOnlyHint
// makes the tool read-only (and so NoSideEffects); otherwise
// idempotentHint makes it Idempotent; destructiveHint alone never makes a
// retry safe, so a destructive or unannotated tool stays
// IdempotencyUnknown. MCP tools are never concurrency-safe.
func toolOptions(t *sdk.Tool, group string) []toolkit.Option {
	opts := []toolkit.Option{toolkit.ConcurrencyUnsafe(), toolkit.WithKind(toolkit.KindMCP)}
	if group != "" {
		opts = append(opts, toolkit.InGroup(group))
	}
	if a := t.Annotations; a != nil {
		switch {
		case a.ReadOnlyHint:
			opts = append(opts, toolkit.ReadOnly())
		case a.IdempotentHint:
			opts = append(opts, toolkit.WithIdempotency(toolkit.Idempotent))
		}
	}
	return opts
}

// resultChunk converts a tools/call result into one chunk:
//
//	text                          → text block
//	image, audio                  → data block (base64) with its media type
//	embedded resource with text   → text block: the resource as indented JSON (uri, mimeType, meta, text), named by its URI
//	embedded resource with a blob → data block named by its URI
//	resource link                 → text block referencing the link (uri, name, title, type, size)
//	structuredContent             → metadata "structured_content", and its
//	                                JSON as a text block when there is no content
//	_meta                         → metadata "mcp_meta"
//	isError                       → state error (the final response gets code tool_error)
//
// A structuredContent or _meta nested deeper than maxMetadataDepth is
// kept as its JSON text. When the blocks cannot tell the gateway what the
// server sent (contentLayout), the content as the server sent it goes in
// metadata "mcp_content" too.
func resultChunk(res *sdk.CallToolResult) toolkit.Chunk {
	c := toolkit.Chunk{State: toolkit.StateRunning}
	if len(res.Content) > 0 {
		// Once: a result may hold hundreds of thousands of blocks.
		c.Content = make([]toolkit.Block, 0, len(res.Content))
	}
	for _, content := range res.Content {
		c.Content = append(c.Content, contentBlock(content))
	}
	if res.StructuredContent != nil {
		c.Metadata = map[string]any{"structured_content": metadataValue(res.StructuredContent)}
		// The model reads content, not metadata: a result that is only
		// structured (no content at all) reaches it as the JSON text the
		// MCP spec asks servers to mirror it in.
		if len(c.Content) == 0 {
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				c.Content = append(c.Content, toolkit.Block{Type: toolkit.BlockText, Text: string(b)})
			}
		}
	}
	if layout := contentLayout(res.Content, c.Content); layout != nil {
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
		c.Metadata[metaMCPContent] = layout
	}
	if len(res.Meta) > 0 {
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
		c.Metadata["mcp_meta"] = metadataValue(map[string]any(res.Meta))
	}
	if res.IsError {
		c.State = toolkit.StateError
		if len(c.Content) == 0 {
			c.Content = []toolkit.Block{{Type: toolkit.BlockText, Text: "The MCP tool reported an error without a message."}}
		}
	}
	return c
}

func contentBlock(content sdk.Content) toolkit.Block {
	switch x := content.(type) {
	case *sdk.TextContent:
		return toolkit.Block{Type: toolkit.BlockText, Text: x.Text}
	case *sdk.ImageContent:
		return toolkit.Block{Type: toolkit.BlockData, MediaType: x.MIMEType, Data: base64.StdEncoding.EncodeToString(x.Data)}
	case *sdk.AudioContent:
		return toolkit.Block{Type: toolkit.BlockData, MediaType: x.MIMEType, Data: base64.StdEncoding.EncodeToString(x.Data)}
	case *sdk.EmbeddedResource:
		r := x.Resource
		if r == nil {
			return toolkit.Block{Type: toolkit.BlockText, Text: "[empty embedded resource]"}
		}
		if r.Blob != nil {
			return toolkit.Block{Type: toolkit.BlockData, MediaType: r.MIMEType, Data: base64.StdEncoding.EncodeToString(r.Blob), Name: r.URI}
		}
		et := embeddedText{URI: r.URI, Meta: r.Meta, Text: r.Text}
		if r.MIMEType != "" {
			et.MIMEType = &r.MIMEType
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		_ = enc.Encode(et)
		// Name (the URI) marks the text as this JSON, so the gateway can
		// give an MCP client the resource back (embeddedResource).
		return toolkit.Block{Type: toolkit.BlockText, Text: strings.TrimSuffix(b.String(), "\n"), Name: r.URI}
	case *sdk.ResourceLink:
		// Name (the URI) marks the text as this rendering, so the gateway
		// can give an MCP client the link back (resourceLink).
		return toolkit.Block{Type: toolkit.BlockText, Text: resourceLinkText(x), Name: x.URI}
	default:
		// Not produced by tools/call today; keep it visible as JSON rather
		// than dropping it.
		b, err := json.Marshal(content)
		if err != nil {
			return toolkit.Block{Type: toolkit.BlockText, Text: fmt.Sprintf("[unsupported MCP content %T]", content)}
		}
		return toolkit.Block{Type: toolkit.BlockText, Text: string(b)}
	}
}

// maxMetadataDepth bounds the nesting of a result's structuredContent and
// _meta as metadata values: the bus's decoders refuse a frame nested
// deeper than wire.MaxDepth (64), and the metadata sits a few levels
// down in the final response, so a deeper value made the response
// unreadable to the caller, who took the worker for lost (and called a
// read-only tool again).
const maxMetadataDepth = toolkit.MaxSchemaDepth

// metadataValue is v as plain JSON values (jsonShape), or as its JSON
// text when it nests deeper than maxMetadataDepth.
func metadataValue(v any) any { return shallow(jsonShape(v)) }

// shallow is v, a plain JSON value, or its JSON text when it nests deeper
// than maxMetadataDepth.
func shallow(v any) any {
	if !nestedDeeper(v, maxMetadataDepth) {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// nestedDeeper reports whether the maps and slices of v nest more than
// limit levels.
func nestedDeeper(v any, limit int) bool {
	switch x := v.(type) {
	case map[string]any:
		if limit == 0 {
			return true
		}
		for _, e := range x {
			if nestedDeeper(e, limit-1) {
				return true
			}
		}
	case []any:
		if limit == 0 {
			return true
		}
		for _, e := range x {
			if nestedDeeper(e, limit-1) {
				return true
			}
		}
	}
	return false
}

// jsonShape converts v to plain JSON values (maps, slices, strings,
// float64, bool, nil) so it travels on any codec.
func jsonShape(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return string(b)
	}
	return out
}

// metaMCPContent is the metadata key of a result's content as its server
// sent it (contentLayout).
const metaMCPContent = "mcp_content"

// maxLayoutBytes bounds the JSON of a content kept by contentLayout.
const maxLayoutBytes = 64 << 10

// contentLayout is a result's content as its server sent it (plain JSON
// values), when the blocks made of it lose what it was: a resource link
// or embedded text resource next to another text block, with which
// accumulation merges it into one text (the model reads that text; the
// gateway gives an MCP client the content back, see mcpContent). nil
// when the blocks keep it, or when its JSON is over maxLayoutBytes (the
// client then gets the merged text).
func contentLayout(content []sdk.Content, blocks []toolkit.Block) any {
	lossy := false
	for i := 1; i < len(blocks) && !lossy; i++ {
		a, b := content[i-1], content[i]
		lossy = blocks[i-1].Type == toolkit.BlockText && blocks[i].Type == toolkit.BlockText &&
			(textRendered(a) || textRendered(b))
	}
	if !lossy {
		return nil
	}
	b, err := json.Marshal(content)
	if err != nil || len(b) > maxLayoutBytes {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return shallow(out)
}

// textRendered reports whether content becomes a text block that stands
// for something else: a resource link or an embedded text resource.
func textRendered(content sdk.Content) bool {
	switch x := content.(type) {
	case *sdk.ResourceLink:
		return true
	case *sdk.EmbeddedResource:
		return x.Resource != nil && x.Resource.Blob == nil
	}
	return false
}

// mcpContent gives back the content a result's server sent, kept by
// contentLayout, when the final's content is still exactly what it
// became (no middleware changed it, nothing was added). ok is false
// otherwise.
func mcpContent(r *toolkit.Response) (_ []sdk.Content, ok bool) {
	raw, found := r.Metadata[metaMCPContent]
	if !found {
		return nil, false
	}
	b, err := json.Marshal(map[string]any{"content": raw})
	if err != nil {
		return nil, false
	}
	var res sdk.CallToolResult
	if json.Unmarshal(b, &res) != nil || len(res.Content) == 0 {
		return nil, false
	}
	var acc toolkit.Accumulator
	c := toolkit.Chunk{}
	for _, item := range res.Content {
		c.Content = append(c.Content, contentBlock(item))
	}
	if acc.Add(&c) != nil {
		return nil, false
	}
	got := acc.Response("").Content
	if len(got) != len(r.Content) {
		return nil, false
	}
	for i := range got {
		want := r.Content[i]
		want.ID = got[i].ID
		if got[i] != want {
			return nil, false
		}
	}
	return res.Content, true
}

// embeddedText is an embedded text resource as a text block shows it to
// the model: AgentScope's conversion, pydantic's model_dump_json(indent=2)
// of the resource, whose fields are all there (null when missing).
type embeddedText struct {
	URI      string         `json:"uri"`
	MIMEType *string        `json:"mimeType"`
	Meta     map[string]any `json:"meta"`
	Text     string         `json:"text"`
}

// resourceLinkText is a resource link as a text block shows it to the
// model: "[resource link] URI (name: …; title: …; description: …; type:
// …; size: N bytes)", each part only when the link has it.
func resourceLinkText(x *sdk.ResourceLink) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[resource link] %s", x.URI)
	var attrs []string
	for _, a := range resourceLinkAttrs {
		if v := a.get(x); v != "" {
			attrs = append(attrs, a.key+v)
		}
	}
	if len(attrs) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(attrs, "; "))
	}
	b.WriteString("\n")
	return b.String()
}

// resourceLinkAttrs are the parts of resourceLinkText, in order.
var resourceLinkAttrs = []struct {
	key string
	get func(*sdk.ResourceLink) string
	set func(*sdk.ResourceLink, string)
}{
	{"name: ", func(x *sdk.ResourceLink) string { return x.Name }, func(x *sdk.ResourceLink, v string) { x.Name = v }},
	{"title: ", func(x *sdk.ResourceLink) string { return x.Title }, func(x *sdk.ResourceLink, v string) { x.Title = v }},
	{"description: ", func(x *sdk.ResourceLink) string { return x.Description }, func(x *sdk.ResourceLink, v string) { x.Description = v }},
	{"type: ", func(x *sdk.ResourceLink) string { return x.MIMEType }, func(x *sdk.ResourceLink, v string) { x.MIMEType = v }},
	{"size: ", func(x *sdk.ResourceLink) string {
		if x.Size == nil {
			return ""
		}
		return strconv.FormatInt(*x.Size, 10) + " bytes"
	}, func(x *sdk.ResourceLink, v string) {
		// A value that is not "N bytes" renders otherwise: not a link.
		if n, err := strconv.ParseInt(strings.TrimSuffix(v, " bytes"), 10, 64); err == nil {
			x.Size = &n
		}
	}},
}

// resourceLink gives back the resource link a text block was made from
// (contentBlock): named by a URI and holding exactly that link's
// rendering. ok is false for any other text block. A part whose value
// holds what reads as the next part's key ("; title: ") is read as that
// part, which renders the same text.
func resourceLink(b toolkit.Block) (_ *sdk.ResourceLink, ok bool) {
	if b.Type != toolkit.BlockText || b.Name == "" {
		return nil, false
	}
	rest, ok := strings.CutPrefix(b.Text, "[resource link] "+b.Name)
	if !ok {
		return nil, false
	}
	x := &sdk.ResourceLink{URI: b.Name}
	if inner, ok := strings.CutPrefix(rest, " ("); ok {
		inner, ok = strings.CutSuffix(inner, ")\n")
		if !ok {
			return nil, false
		}
		next := 0 // resourceLinkAttrs[next:] may come
		for part := range strings.SplitSeq(inner, "; ") {
			i := next
			for i < len(resourceLinkAttrs) && !strings.HasPrefix(part, resourceLinkAttrs[i].key) {
				i++
			}
			if i == len(resourceLinkAttrs) { // part of the previous value
				if next == 0 {
					return nil, false
				}
				a := resourceLinkAttrs[next-1]
				a.set(x, a.get(x)+"; "+part)
				continue
			}
			resourceLinkAttrs[i].set(x, strings.TrimPrefix(part, resourceLinkAttrs[i].key))
			next = i + 1
		}
	}
	if resourceLinkText(x) != b.Text {
		return nil, false
	}
	return x, true
}

// embeddedResource gives back the embedded text resource a text block
// was made from (contentBlock): named by a URI and holding exactly that
// resource's JSON. ok is false for any other text block.
func embeddedResource(b toolkit.Block) (_ *sdk.EmbeddedResource, ok bool) {
	if b.Type != toolkit.BlockText || b.Name == "" || !strings.HasPrefix(b.Text, "{") {
		return nil, false
	}
	var r embeddedText
	dec := json.NewDecoder(strings.NewReader(b.Text))
	dec.DisallowUnknownFields()
	if dec.Decode(&r) != nil || r.URI != b.Name || dec.More() {
		return nil, false
	}
	rc := &sdk.ResourceContents{URI: r.URI, Meta: r.Meta, Text: r.Text}
	if r.MIMEType != nil {
		rc.MIMEType = *r.MIMEType
	}
	return &sdk.EmbeddedResource{Resource: rc}, true
}
