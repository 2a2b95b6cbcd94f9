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

	"github.com/toolbus/toolbus/internal/urlredact"
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
	// mcp__{Name}__{tool}. It must match [A-Za-z0-9_-]+, without "__" and
	// without a '_' at either end: so no tool name of one server (which
	// may hold "__") can be that of another's tool.
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
	// SessionBound says the server keeps state per client between calls
	// (a browser, a database session): its tools are session-bound
	// (toolkit.SessionBound), so a fleet sends a session's calls of them
	// to one worker. Default false.
	SessionBound bool `yaml:"session_bound,omitempty" json:"session_bound,omitempty"`
	// Group is the toolkit group the tools go in; empty means "basic".
	// A group that does not exist yet is created with a generic
	// description. Its name is a token of [A-Za-z0-9_-] of at most
	// toolkit.MaxNameLen bytes.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// EnableTools, when non-empty, lists the only tools (by their MCP
	// names) that are registered. A name the server does not have is an
	// error. An empty list, not nil, is refused: AgentScope registers no
	// tool for it, and nil registers all.
	EnableTools []string `yaml:"enable_tools,omitempty" json:"enable_tools,omitempty"`
	// Presets fixes arguments of the server's tools (by their MCP names):
	// each tool's preset arguments are hidden from its schema and always
	// win over the model's input (toolkit.WithPresets; AgentScope 1.x's
	// preset_kwargs_mapping). A preset must be a property of the tool's
	// schema; a tool the server does not have is a warning.
	Presets map[string]map[string]any `yaml:"presets,omitempty" json:"presets,omitempty"`
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
	// ServeResources offers the server's resources, resource templates,
	// prompts and completions to the gateway's MCP clients whose sessions
	// see the server's group (mounted.go). Off by default: permission
	// rules name tools, so these reads are not checked by them; turn it
	// on for a server whose resources and prompts any caller that may
	// activate the group may read.
	ServeResources bool `yaml:"serve_resources,omitempty" json:"serve_resources,omitempty"`
	// LogLevel is the level (logging/setLevel) from which the server's log
	// messages reach the caller of the call they belong to (relay.go): one
	// of toolkit.LogLevels, or "off" (the default, as empty). A stateless
	// server's messages are its call's; a stateful server's go to the call
	// in flight when there is exactly one, so its background messages go
	// there too. Setting the level costs a request per session (per call
	// for a stateless server).
	LogLevel string `yaml:"log_level,omitempty" json:"log_level,omitempty"`
	// OAuth, when set, authorizes a streamable-http server by OAuth 2.1
	// (oauth.go): the grant comes from `toolctl mcp login` through the
	// fleet's toolbus_oauth bucket.
	OAuth *OAuthConfig `yaml:"oauth,omitempty" json:"oauth,omitempty"`
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("mcp: invalid server config")

// ConfigError is one problem with a ServerConfig: the field (its YAML key,
// "" for the server as a whole) and the reason, in words for an operator.
// It wraps ErrInvalidConfig.
type ConfigError struct {
	Server string
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	name := e.Server
	if name == "" {
		name = "(unnamed)"
	}
	if e.Field == "" {
		return fmt.Sprintf("%v %q: %s", ErrInvalidConfig, name, e.Reason)
	}
	return fmt.Sprintf("%v %q: %s: %s", ErrInvalidConfig, name, e.Field, e.Reason)
}

func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// reservedHeaders cannot be set by configuration or at runtime: the HTTP
// stack or the MCP transport owns them (a Content-Type or Accept of one's
// own breaks the session with "Unsupported Media Type").
var reservedHeaders = []string{"host", "content-length", "connection", "transfer-encoding", "content-type", "accept", "mcp-session-id", "mcp-protocol-version"}

// WithDefaults returns a copy with the defaults filled in: the transport
// follows from what is set (stdio with a command; with a url, sse when
// its path ends in /sse or /messages/, as AgentScope's MCPClient picks,
// unless OAuth is set, else streamable-http) and the mode is stateful. The worker's configuration applies it
// when it is loaded; NewClient and Mount apply it too.
func (c ServerConfig) WithDefaults() ServerConfig {
	if c.Transport == "" {
		switch {
		case c.Command != "" && c.URL == "":
			c.Transport = TransportStdio
		case c.URL != "" && c.Command == "":
			c.Transport = TransportStreamableHTTP
			// OAuth is streamable HTTP's alone: such a server stays one.
			if u, err := url.Parse(c.URL); err == nil && c.OAuth == nil && (strings.HasSuffix(u.Path, "/sse") || strings.HasSuffix(u.Path, "/messages/")) {
				c.Transport = TransportSSE
			}
		}
	}
	if c.Mode == "" {
		c.Mode = ModeStateful
	}
	return c
}

// MaxServerNameLen bounds a server's name: its tools' names,
// mcp__{server}__{tool}, are at most toolkit.MaxNameLen bytes, a tool's
// own name at least one.
const MaxServerNameLen = toolkit.MaxNameLen - len("mcp____") - 1

// Validate checks the configuration and fills in nothing. It is the one
// check of an MCP server's configuration, also for the worker's YAML: it
// returns every problem as a *ConfigError (joined), each wrapping
// ErrInvalidConfig, or nil.
func (c *ServerConfig) Validate() error {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Server: c.Name, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	switch {
	case c.Name == "":
		fail("", "an MCP server needs a name")
	case !toolkit.ValidName(c.Name):
		fail("name", "invalid server name %q: use letters, digits, '_' and '-'", c.Name)
	case strings.Contains(c.Name, "__") || strings.HasPrefix(c.Name, "_") || strings.HasSuffix(c.Name, "_"):
		// Server a's tool x__b would be mcp__a__x__b, the name of server
		// a__x's tool b: whichever registered first would take the other's
		// calls.
		fail("name", "invalid server name %q: with \"__\" or a '_' at either end, its tools' names (mcp__NAME__TOOL) could be another server's", c.Name)
	case len(c.Name) > MaxServerNameLen:
		// Every tool would be skipped, its name over toolkit.MaxNameLen.
		fail("name", "a server name of %d bytes: at most %d, for its tools' names (mcp__NAME__TOOL) to fit in %d", len(c.Name), MaxServerNameLen, toolkit.MaxNameLen)
	}
	switch c.Transport {
	case TransportStdio:
		if c.Command == "" {
			fail("", "a stdio server needs a command")
		}
		if stdioUnsupported != "" {
			fail("transport", "%s", stdioUnsupported)
		}
		if c.URL != "" {
			fail("url", "a stdio server has no url")
		}
		if len(c.Headers) > 0 {
			fail("headers", "a stdio server takes no headers")
		}
	case TransportStreamableHTTP, TransportSSE:
		if c.URL == "" {
			fail("", "a %s server needs a url", c.Transport)
		} else if err := checkHTTPURL(c.URL); err != nil {
			fail("url", "invalid URL %q: %v", urlredact.URL(c.URL), err)
		}
		if c.Command != "" || len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "" {
			fail("", "a %s server is reached by url: command, args, env and cwd are for stdio servers", c.Transport)
		}
		if err := checkHeaders(c.Headers); err != nil {
			fail("headers", "%v", err)
		}
	case "":
		fail("", "give either a command (stdio) or a url (streamable-http, sse), or set transport")
	default:
		fail("transport", "invalid transport %q: want stdio, streamable-http or sse", c.Transport)
	}
	switch c.Mode {
	case "", ModeStateful, ModeStateless:
	default:
		fail("mode", "invalid value %q: want one of stateful, stateless", c.Mode)
	}
	switch {
	case len(c.Group) > toolkit.MaxNameLen:
		// The toolkit would refuse it once the server is connected.
		fail("group", "a group name of %d bytes: at most %d", len(c.Group), toolkit.MaxNameLen)
	case c.Group != "" && !toolkit.ValidName(c.Group):
		fail("group", "invalid group name %q: use letters, digits, '_' and '-'", c.Group)
	}
	for key := range c.Env {
		if key == "" || strings.ContainsAny(key, "=\x00") {
			fail("env", "invalid environment variable name %q", key)
		}
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"enable_tools", c.EnableTools}, {"disable_tools", c.DisableTools}} {
		if slices.Contains(list.names, "") {
			fail(list.field, "contains an empty name")
		}
	}
	if c.EnableTools != nil && len(c.EnableTools) == 0 {
		// AgentScope filters by any list given, so [] enables no tool
		// there; here it would read as no filter, every tool.
		fail("enable_tools", "empty: it would enable none of the server's tools, as AgentScope's enable_tools=[] does; leave enable_tools out to register them all, or the server out to register none")
	}
	for tool, p := range c.Presets {
		if tool == "" || len(p) == 0 {
			fail("presets", "tool %q: give a tool name and at least one argument", tool)
		}
	}
	for _, n := range c.EnableTools {
		if slices.Contains(c.DisableTools, n) {
			fail("disable_tools", "tool %q is both enabled and disabled", n)
		}
	}
	if v := c.ProtocolVersion; v != "" {
		if _, err := time.Parse("2006-01-02", v); err != nil {
			fail("protocol_version", "%q is not an MCP protocol version (YYYY-MM-DD, such as 2025-11-25)", v)
		}
	}
	if c.LogLevel != "" && c.LogLevel != "off" && !slices.Contains(toolkit.LogLevels, c.LogLevel) {
		fail("log_level", "invalid level %q: want off or one of %s", c.LogLevel, strings.Join(toolkit.LogLevels, ", "))
	}
	if c.OAuth != nil {
		c.OAuth.validate(c, fail)
	}
	if c.Timeout < 0 {
		fail("timeout", "negative duration %v", c.Timeout)
	}
	if c.ConnectTimeout < 0 {
		fail("connect_timeout", "negative duration %v", c.ConnectTimeout)
	}
	return errors.Join(errs...)
}

// checkHTTPURL accepts an absolute http or https URL with a host.
func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	ue := (*url.Error)(nil)
	switch {
	case errors.As(err, &ue):
		return ue.Err // without the URL, which may carry secrets: the caller names it redacted
	case err != nil:
		return err
	case !strings.Contains(raw, "://"):
		return errors.New("want an absolute http:// or https:// URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q is not one of http, https", u.Scheme)
	case u.Host == "":
		return errors.New("no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("invalid port %q", p)
		}
	}
	return nil
}

func (c *ServerConfig) mode() Mode {
	if c.Mode == "" {
		return ModeStateful
	}
	return c.Mode
}

// logLevel is the level set on a new session, "" for none.
func (c *ServerConfig) logLevel() string {
	if c.LogLevel == "off" {
		return ""
	}
	return c.LogLevel
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
