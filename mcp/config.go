package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"gopkg.in/yaml.v3"
)

// Transport names how a worker reaches an MCP server.
type Transport string

const (
	// TransportStdio starts Command as a child process and speaks
	// newline-delimited JSON-RPC on its stdin/stdout.
	TransportStdio Transport = "stdio"
	// TransportStreamableHTTP is the MCP Streamable HTTP transport (URL is
	// the endpoint, typically …/mcp).
	TransportStreamableHTTP Transport = "streamable-http"
	// TransportSSE is the legacy HTTP+SSE transport (URL is the SSE
	// endpoint, typically …/sse).
	TransportSSE Transport = "sse"
)

// Mode says how sessions are used.
type Mode string

const (
	// ModeStateful (the default) keeps one session open, reconnecting after
	// a failure or an expired HTTP session.
	ModeStateful Mode = "stateful"
	// ModeStateless opens a fresh session for every call and every listing.
	ModeStateless Mode = "stateless"
)

// DefaultConnectTimeout bounds connecting and listing when
// ServerConfig.ConnectTimeout is zero.
const DefaultConnectTimeout = 30 * time.Second

// ServerConfig describes one MCP server whose tools a worker serves. It is
// what the worker's YAML lists under mcp_servers:
//
//	mcp_servers:
//	  - name: everything
//	    transport: stdio
//	    command: npx
//	    args: [-y, "@modelcontextprotocol/server-everything"]
//	    group: demo
//	    disable_tools: [toggle-simulated-logging]
//	    timeout: 60s
//	  - name: search
//	    transport: streamable-http
//	    url: https://search.example.com/mcp
//	    headers: {Authorization: Bearer abc}
//	    mode: stateless
//
// Call Validate before use; NewClient does.
type ServerConfig struct {
	// Name identifies the server; its tools are named
	// mcp__{Name}__{tool}. It must match [A-Za-z0-9_-]+.
	Name string `yaml:"name" json:"name"`
	// Transport is stdio, streamable-http or sse.
	Transport Transport `yaml:"transport" json:"transport"`

	// Command, Args, Env and Cwd start a stdio server. Env is added to the
	// worker's own environment (and wins over it).
	Command string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Cwd     string            `yaml:"cwd,omitempty" json:"cwd,omitempty"`

	// URL is the endpoint of an HTTP server (streamable-http or sse).
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// Headers are sent with every HTTP request (streamable-http or sse).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`

	// Mode is stateful (the default) or stateless.
	Mode Mode `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Group is the toolkit group the tools go in; empty means "basic".
	// A group that does not exist yet is created with a generic
	// description.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// EnableTools, when non-empty, lists the only tools (by their MCP
	// names) that are registered. A name the server does not have is an
	// error.
	EnableTools []string `yaml:"enable_tools,omitempty" json:"enable_tools,omitempty"`
	// DisableTools lists tools (by their MCP names) that are not
	// registered. It must not overlap EnableTools.
	DisableTools []string `yaml:"disable_tools,omitempty" json:"disable_tools,omitempty"`

	// Timeout bounds each tool call; zero means only the caller's context
	// does. A call that runs out of it ends with code timeout.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// ConnectTimeout bounds connecting (including the protocol handshake)
	// and listing tools; zero means DefaultConnectTimeout.
	ConnectTimeout Duration `yaml:"connect_timeout,omitempty" json:"connect_timeout,omitempty"`
	// ProtocolVersion, when set, pins the protocol version offered in the
	// handshake. "2025-11-25" skips the server/discover probe, which
	// legacy stdio servers that ignore unknown requests never answer.
	ProtocolVersion string `yaml:"protocol_version,omitempty" json:"protocol_version,omitempty"`
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("toolbus/mcp: invalid server config")

// reservedHeaders cannot be set by configuration or at runtime: the HTTP
// stack or the MCP transport owns them.
var reservedHeaders = []string{"host", "content-length", "connection", "transfer-encoding", "mcp-session-id", "mcp-protocol-version"}

// Validate checks the configuration and fills in nothing; every problem is
// an error wrapping ErrInvalidConfig that names the server and the field.
func (c *ServerConfig) Validate() error {
	fail := func(format string, args ...any) error {
		name := c.Name
		if name == "" {
			name = "(unnamed)"
		}
		return fmt.Errorf("%w %q: %s", ErrInvalidConfig, name, fmt.Sprintf(format, args...))
	}
	if !toolkit.ValidName(c.Name) {
		return fail("name must match [A-Za-z0-9_-]+")
	}
	switch c.Transport {
	case TransportStdio:
		if c.Command == "" {
			return fail("transport stdio needs a command")
		}
		if c.URL != "" || len(c.Headers) > 0 {
			return fail("url and headers are for HTTP transports, not stdio")
		}
	case TransportStreamableHTTP, TransportSSE:
		if c.URL == "" {
			return fail("transport %s needs a url", c.Transport)
		}
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("url %q must be an absolute http or https URL", c.URL)
		}
		if c.Command != "" || len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "" {
			return fail("command, args, env and cwd are for stdio, not %s", c.Transport)
		}
		if err := checkHeaders(c.Headers); err != nil {
			return fail("headers: %v", err)
		}
	case "":
		return fail("transport is required (stdio, streamable-http or sse)")
	default:
		return fail("unknown transport %q (want stdio, streamable-http or sse)", c.Transport)
	}
	switch c.Mode {
	case "", ModeStateful, ModeStateless:
	default:
		return fail("unknown mode %q (want stateful or stateless)", c.Mode)
	}
	if c.Group != "" && !toolkit.ValidName(c.Group) {
		return fail("group %q must match [A-Za-z0-9_-]+", c.Group)
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"enable_tools", c.EnableTools}, {"disable_tools", c.DisableTools}} {
		for _, n := range list.names {
			if n == "" {
				return fail("%s contains an empty name", list.field)
			}
		}
	}
	if len(c.EnableTools) > 0 && len(c.DisableTools) > 0 {
		var both []string
		for _, n := range c.EnableTools {
			if slices.Contains(c.DisableTools, n) && !slices.Contains(both, n) {
				both = append(both, n)
			}
		}
		if len(both) > 0 {
			return fail("enable_tools and disable_tools both list %s", strings.Join(both, ", "))
		}
	}
	if v := c.ProtocolVersion; v != "" {
		if _, err := time.Parse("2006-01-02", v); err != nil {
			return fail("protocol_version %q is not an MCP protocol version (YYYY-MM-DD, such as 2025-11-25)", v)
		}
	}
	if c.Timeout < 0 || c.ConnectTimeout < 0 {
		return fail("timeouts must not be negative")
	}
	return nil
}

func (c *ServerConfig) mode() Mode {
	if c.Mode == "" {
		return ModeStateful
	}
	return c.Mode
}

func (c *ServerConfig) connectTimeout() time.Duration {
	if c.ConnectTimeout <= 0 {
		return DefaultConnectTimeout
	}
	return time.Duration(c.ConnectTimeout)
}

// Duration is a time.Duration that reads "30s" / "1m30s" strings or plain
// numbers of seconds (30, 2.5) from YAML and JSON, and writes strings.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "30s" or 30 (seconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return d.set(v)
}

// MarshalYAML writes the duration as a string such as "30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads "30s" or 30 (seconds).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("duration: want a scalar such as 30s, got a %v node", n.Kind)
	}
	if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
		return d.set(f)
	}
	return d.set(n.Value)
}

func (d *Duration) set(v any) error {
	switch x := v.(type) {
	case float64:
		*d = Duration(x * float64(time.Second))
		return nil
	case string:
		p, err := time.ParseDuration(x)
		if err != nil {
			return fmt.Errorf("duration %q: %w", x, err)
		}
		*d = Duration(p)
		return nil
	}
	return fmt.Errorf("duration: want a string such as \"30s\" or a number of seconds, got %T", v)
}
