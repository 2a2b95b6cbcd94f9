package mcp

import "testing"

// TestTransportInferredFromURL: with no transport set, a URL whose path
// ends in /sse or /messages/ is a legacy SSE server, any other a
// streamable HTTP one, as AgentScope's MCPClient picks (a query string
// does not hide the path), unless OAuth is set; a transport that is set
// is kept.
func TestTransportInferredFromURL(t *testing.T) {
	for _, tt := range []struct {
		url       string
		transport Transport
		want      Transport
	}{
		{"http://127.0.0.1:8003/sse", "", TransportSSE},
		{"http://127.0.0.1:8003/sse?token=abc&x=1", "", TransportSSE},
		{"https://h.example/api/sse/", "", TransportStreamableHTTP},
		{"http://127.0.0.1:8003/messages/", "", TransportSSE},
		{"http://127.0.0.1:8003/messages/?session_id=1", "", TransportSSE},
		{"http://127.0.0.1:8003/messages", "", TransportStreamableHTTP},
		{"http://127.0.0.1:8002/mcp", "", TransportStreamableHTTP},
		{"http://127.0.0.1:8002/mcp?path=/sse", "", TransportStreamableHTTP},
		{"http://127.0.0.1:8002/ssex", "", TransportStreamableHTTP},
		{"http://127.0.0.1:8003/sse", TransportStreamableHTTP, TransportStreamableHTTP},
		{"http://127.0.0.1:8002/mcp", TransportSSE, TransportSSE},
		{"://bad", "", TransportStreamableHTTP},
	} {
		c := ServerConfig{Name: "s", URL: tt.url, Transport: tt.transport}.WithDefaults()
		if c.Transport != tt.want {
			t.Errorf("WithDefaults(url %q, transport %q).Transport = %q, want %q", tt.url, tt.transport, c.Transport, tt.want)
		}
	}
	// OAuth is streamable HTTP's alone: a configuration that authorizes
	// its server so, which worked before the path was looked at, still does.
	c := ServerConfig{Name: "s", URL: "https://h.example/sse", OAuth: &OAuthConfig{}}.WithDefaults()
	if c.Transport != TransportStreamableHTTP {
		t.Errorf("WithDefaults(url with /sse, OAuth set).Transport = %q, want %q", c.Transport, TransportStreamableHTTP)
	}
}
