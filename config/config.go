package config

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/regularfile"
	"github.com/toolbus/toolbus/internal/urlredact"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// Config is a worker's configuration. The zero value of every field means
// its default (see Default), except a grace_period the file sets to 0;
// Parse and Load fill most defaults in (see ApplyDefaults).
type Config struct {
	// Instance names this worker in logs and on the responses it serves:
	// letters, digits, '_' and '-'. Empty means "<hostname>-<pid>" (see
	// InstanceName).
	Instance string `yaml:"instance"`
	// QueueGroup is the NATS queue group the worker serves tool calls in;
	// workers in the same group share the load. Default "toolbus".
	QueueGroup string `yaml:"queue_group"`
	// GracePeriod is how long a stopping worker lets in-flight calls
	// finish before it interrupts them. Default 30s (when the file does
	// not give it); 0 interrupts them at once.
	GracePeriod time.Duration `yaml:"grace_period"`
	// LogFormat is "text" (the default) or "json".
	LogFormat string `yaml:"log_format"`
	// LogLevel is "debug", "info" (the default), "warn" or "error".
	LogLevel string `yaml:"log_level"`
	// LogCalls says how successful calls are logged, for busy fleets;
	// failed calls are always logged, each one.
	LogCalls LogCalls `yaml:"log_calls"`

	// NATS says how to reach an existing NATS server or cluster. With no
	// URLs the worker starts an embedded server instead (Embedded).
	NATS NATS `yaml:"nats"`
	// Embedded configures the server started when NATS.URLs is empty.
	Embedded Embedded `yaml:"embedded"`

	// Groups are the tool groups besides "basic".
	Groups []Group `yaml:"groups"`
	// Builtins says which built-in tools are on.
	Builtins Builtins `yaml:"builtins"`
	// MCPServers are MCP servers whose tools the worker serves, as
	// mcp__<name>__<tool>: each entry is an mcp.ServerConfig, checked by
	// its Validate.
	MCPServers []mcp.ServerConfig `yaml:"mcp_servers"`
	// Skills are directories of SKILL.md skills.
	Skills []Skills `yaml:"skills"`
	// Middleware configures the middleware every call goes through.
	Middleware Middleware `yaml:"middleware"`
	// Permissions turns the permission checks on; nil (no permissions
	// section) runs every call unchecked.
	Permissions *Permissions `yaml:"permissions"`
	// State says where sessions' state lives and how long it is kept.
	State State `yaml:"state"`
	// Durable configures the durable path (bus.DurableOptions).
	Durable Durable `yaml:"durable"`

	src *source // where the config came from, for error positions
}

// NATS is the connection to an existing NATS server or cluster. At most
// one way to authenticate may be given: a credentials file, an nkey seed
// file, user and password, or a token.
type NATS struct {
	// URLs of the servers, e.g. nats://10.0.0.1:4222; a URL without a
	// scheme means nats://.
	URLs []string `yaml:"urls"`
	// Credentials is a .creds file (user JWT and nkey seed).
	Credentials string `yaml:"credentials"`
	// NKeySeed is a file holding an nkey seed.
	NKeySeed string `yaml:"nkey_seed"`
	User     string `yaml:"user"`
	Password string `yaml:"password"`
	Token    string `yaml:"token"`
	TLS      TLS    `yaml:"tls"`
	// Identity is the caller identity a client (toolctl, the gateway)
	// calls as: one token of [A-Za-z0-9_-], the name of its caller role in
	// the server's configuration (toolctl auth init). Its calls, replies,
	// cancels and sessions are its own; its inbox prefix is
	// _INBOX.<identity>. Workers ignore it.
	Identity string `yaml:"identity"`
}

// TLS are the PEM files of a TLS connection: a CA to verify the server
// with, and a client certificate and key (both or neither).
type TLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// Where sessions' group state lives (State.Groups).
const (
	// GroupsKV is the fleet's JetStream KV bucket, shared by every worker.
	GroupsKV = "kv"
	// GroupsMemory is this worker's own memory: no JetStream needed, but
	// the workers of a fleet do not share a session's activation, a
	// restart forgets it, and past toolkit.MaxMemorySessions sessions (or
	// toolkit.MaxMemorySessionBytes of their names) the least recently
	// used is forgotten.
	GroupsMemory = "memory"
)

// DefaultSessionTTL is how long a session's group state and permission
// policy are kept after their last change.
const DefaultSessionTTL = bus.DefaultSessionTTL

// DefaultMaxStoredSessions bounds each bucket of sessions' state.
const DefaultMaxStoredSessions = bus.DefaultMaxStoredSessions

// State says where sessions' state lives and how long it is kept.
type State struct {
	// Groups is GroupsKV (the default) or GroupsMemory.
	Groups string `yaml:"groups"`
	// SessionTTL is how long a session's group state and permission
	// policy are kept after their last change (the KV buckets' max age,
	// set when a worker creates them). Default DefaultSessionTTL.
	SessionTTL time.Duration `yaml:"session_ttl"`
	// MaxSessions bounds the sessions each bucket of sessions' state
	// (groups, session pins, permission policies) holds, set when a
	// worker makes it, so callers inventing sessions fill the bound, not
	// the servers' disks. Default DefaultMaxStoredSessions (4 million);
	// -1 no bound.
	MaxSessions int64 `yaml:"max_sessions"`
	// ResultTTL is how long the final of a call sent to keep its result
	// can be fetched (toolctl result), set when the results bucket is
	// created. Default 1h.
	ResultTTL time.Duration `yaml:"result_ttl"`
}

// Durable configures the durable path: calls kept in a JetStream work
// queue until a worker has answered them (subjects.md: Durable calls).
type Durable struct {
	// Off turns the worker's durable path off (it is on whenever group
	// state is in KV, which means JetStream is there).
	Off bool `yaml:"off"`
	// Tools are durable by default: their calls are queued even when a
	// caller sends them on the core path.
	Tools []string `yaml:"tools"`
	// AckWait is how long after the last sign of life of the worker
	// running a call it is delivered again. Default 30s.
	AckWait time.Duration `yaml:"ack_wait"`
	// MaxDeliver is how many times a call is delivered at most. Default 3.
	MaxDeliver int `yaml:"max_deliver"`
	// Replicas of the calls and cancels streams when this worker creates
	// them (1-5). Unset (0): the worker's --kv-replicas.
	Replicas int `yaml:"replicas"`
}

// Embedded is the NATS server (with JetStream) a worker starts when it is
// given no URLs.
type Embedded struct {
	// Listen is the client address. Default "127.0.0.1:4222" (the
	// worker takes ServerConfig's listen over it when the file has one,
	// and toolctl --config dials that);
	// port 0 picks a free port.
	Listen string `yaml:"listen"`
	// StoreDir holds JetStream's data. Default DataDir()/jetstream (the
	// worker takes ServerConfig's store_dir over it likewise).
	StoreDir string `yaml:"store_dir"`
	// ServerConfig is a nats-server configuration file the server starts
	// from, such as the roles `toolctl auth init` writes; the worker's own
	// connection then needs the worker role's key (nats.nkey_seed).
	ServerConfig string `yaml:"server_config"`
	// Insecure lets the server listen on an address other than loopback
	// without authentication; the worker refuses to start so otherwise.
	Insecure bool `yaml:"insecure"`
}

// Group is a tool group a session can turn on and off with reset_tools.
type Group struct {
	// Name is one NATS subject token ([A-Za-z0-9_-]+), not "basic".
	Name string `yaml:"name"`
	// Description is required: the model reads it.
	Description string `yaml:"description"`
	// Instructions are given to the model when the group is activated.
	Instructions string `yaml:"instructions"`
	// Active is the group's state for sessions that have not chosen.
	Active bool `yaml:"active"`
}

// Builtins turns the built-in tools on (see package builtin).
type Builtins struct {
	// Workspace is the directory the file tools are confined to and the
	// shell and Python tools start in. Default DataDir()/workspace.
	Workspace string `yaml:"workspace"`
	// SharedWorkspace says every worker mounts the same Workspace (a
	// shared volume): the file, shell and Python tools are then served by
	// any worker. Without it a session's calls of them go to one worker
	// (session affinity). Default false.
	SharedWorkspace bool `yaml:"shared_workspace"`
	// PerSessionWorkspace gives each session its own sub-directory of
	// Workspace, to which its file tools are confined and in which its
	// shell and Python commands start, made by the session's first write
	// or command (not by a view). Default false.
	PerSessionWorkspace bool `yaml:"per_session_workspace"`
	// MaxSessionWorkspaces is the most session directories (of
	// PerSessionWorkspace) the workspace holds: past it a new session's
	// writes and commands end unavailable, until the operator removes
	// directories of sessions that ended or raises it. Default 100,000;
	// -1: no limit.
	MaxSessionWorkspaces int `yaml:"max_session_workspaces"`
	// Tools lists the tools that are on. Absent means builtin.DefaultTools
	// (echo, sleep and the file tools); an empty list means none.
	Tools []BuiltinTool `yaml:"tools"`
	// Shell runs execute_shell_command (`shell -c command`). Default
	// "/bin/sh".
	Shell string `yaml:"shell"`
	// Python runs execute_python_code. Default "python3".
	Python string `yaml:"python"`
	// DefaultTimeout of a shell or Python call that names none. Default
	// 300s.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// MaxTimeout a shell or Python call may ask for. Default 1h.
	MaxTimeout time.Duration `yaml:"max_timeout"`
	// MaxOutputBytes one call may return. Default 1 MiB.
	MaxOutputBytes int `yaml:"max_output_bytes"`
	// MaxFileBytes is the largest file the file tools read or write. Default 10 MiB.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
}

// BuiltinTool turns one built-in tool on, in a group.
type BuiltinTool struct {
	// Name is one of builtin.Names.
	Name string `yaml:"name"`
	// Group defaults to "exec" for the shell and Python tools (a group
	// that is added, inactive, when not declared) and "basic" otherwise.
	Group string `yaml:"group"`
}

// Skills is a directory of skills: a SKILL.md at its root and, with
// ScanSubdirs, one in each sub-directory.
type Skills struct {
	Dir         string `yaml:"dir"`
	ScanSubdirs bool   `yaml:"scan_subdirs"`
	// Group the skills belong to. Default "basic".
	Group string `yaml:"group"`
}

// Permissions configures the permission checks (package permission):
// every call is decided ALLOW, DENY or ASK from the session's mode and
// rules, which live in JetStream KV and are shared by the fleet. These are
// the worker-wide defaults; a session's own mode replaces Mode and its
// rules are added to these.
type Permissions struct {
	// Mode of sessions that have set none: default, accept_edits,
	// explore, bypass or dont_ask. Default "default".
	Mode string `yaml:"mode"`
	// Allow, Deny and Ask are rules written TOOL or TOOL:PATTERN (a
	// command prefix such as "git status:*" for execute_shell_command, a
	// path glob for the file tools).
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
	Ask   []string `yaml:"ask"`
	// WorkingDirs are trusted by accept_edits; relative paths in calls are
	// resolved against the first. Default: builtins.workspace.
	WorkingDirs []string `yaml:"working_dirs"`
	// ApprovalTTL is how long a pending call and an approval last (the
	// approvals bucket's age, set by the worker that creates it). Unset:
	// the existing bucket's, or 24h for a new one; set, it must agree with
	// an existing bucket's.
	ApprovalTTL time.Duration `yaml:"approval_ttl"`
	// CheckTimeout bounds a call's whole permission check (reading the
	// session's policy, using an approval, recording an ask) when the
	// call has no earlier deadline of its own
	// (permission.Options.CheckTimeout): past it the call ends with code
	// unavailable, saying the permission state is unreachable, and does
	// not run. Raise it for a slow or distant cluster. Unset or 0:
	// permission.DefaultCheckTimeout (30s); there is no unbounded check,
	// so give a long duration rather than 0 for a very patient one.
	CheckTimeout time.Duration `yaml:"check_timeout"`
	// KVReplicas of the permission buckets when this worker creates them
	// (1-5). Unset (0): the worker's --kv-replicas, as its other buckets.
	KVReplicas int `yaml:"kv_replicas"`
}

// Rules returns the configured rules, deny first, then ask, then allow;
// an invalid one is an error (Validate reports them all).
func (p *Permissions) Rules() ([]permission.Rule, error) {
	var out []permission.Rule
	for _, list := range []struct {
		specs []string
		b     permission.Behavior
	}{{p.Deny, permission.Deny}, {p.Ask, permission.Ask}, {p.Allow, permission.Allow}} {
		for _, spec := range list.specs {
			r, err := permission.ParseRule(spec, list.b)
			if err != nil {
				return nil, err
			}
			r.Source = "config"
			out = append(out, r)
		}
	}
	return out, nil
}

// Middleware configures the middleware every call goes through.
type Middleware struct {
	// DefaultTimeout is the deadline of a call whose caller sets none.
	// 0 (the default) means none.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// Timeouts overrides DefaultTimeout per tool name.
	Timeouts map[string]time.Duration `yaml:"timeouts"`
	// RateLimits are token buckets; a call must pass every one that
	// applies to it.
	RateLimits []RateLimit `yaml:"rate_limits"`
	// MaxInFlight is how many calls the worker runs at once; 0 (the
	// default) means the worker's own default.
	MaxInFlight int `yaml:"max_in_flight"`
	// MaxResultBytes bounds the output of one call, in bytes
	// (toolkit.Options.MaxResultBytes): past it the call fails with
	// tool_error. 0 (the default) means 64 MiB; -1, no bound on the
	// worker. Clients bound what they accumulate themselves
	// (bus.ClientOptions.MaxResultBytes, 64 MiB in toolctl and the MCP
	// gateway).
	MaxResultBytes int `yaml:"max_result_bytes"`
}

// LogCalls is how the per-call log lines of successful calls go out.
type LogCalls struct {
	// Success is their level: "info" (the default), "debug", or "off"
	// (failed calls only).
	Success string `yaml:"success"`
	// Sample logs one in this many of them; 0 or 1 logs every one.
	Sample int `yaml:"sample"`
}

// Rate limit keys.
const (
	KeySession = "session"
	KeyTool    = "tool"
	KeyGlobal  = "global"
)

// RateLimit is a token bucket: Rate calls per second on average, Burst at
// once, per Key. A call over the limit ends with code overloaded and a
// retry-after.
type RateLimit struct {
	// Tools the limit applies to; empty means every tool.
	Tools []string `yaml:"tools"`
	// Key is what has a bucket of its own: "session" (the default), "tool"
	// or "global" (one bucket for all).
	Key string `yaml:"key"`
	// Rate in calls per second; required.
	Rate float64 `yaml:"rate"`
	// Burst is the bucket's size. Default: Rate rounded up, at least 1.
	Burst int `yaml:"burst"`
	// MaxKeys bounds the buckets kept (middleware.RateLimit.MaxKeys): a
	// new key when that many are forgets one at random, whose key starts
	// again with a full bucket. 0 (the default) means
	// middleware.DefaultRateLimitKeys (65536).
	MaxKeys int `yaml:"max_keys"`
}

// Defaults.
const (
	DefaultQueueGroup  = "toolbus"
	DefaultGracePeriod = 30 * time.Second
	DefaultLogFormat   = "text"
	DefaultLogLevel    = "info"
	DefaultListen      = "127.0.0.1:4222"
)

// DataDir is where a worker keeps its data unless told otherwise:
// $XDG_DATA_HOME/toolbus, else ~/.local/share/toolbus, else toolbus under
// the temporary directory.
func DataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "toolbus")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "share", "toolbus")
	}
	return filepath.Join(os.TempDir(), "toolbus")
}

// Default returns the configuration of a worker started with no file.
func Default() *Config {
	c := &Config{}
	c.ApplyDefaults()
	return c
}

// Has reports whether the config file set the key at path (dotted, as
// in "embedded.listen") to a value other than null.
func (c *Config) Has(path string) bool { return c.src.has(path) }

// ApplyDefaults fills in every unset field that has a default, except
// those of Builtins (its Workspace aside) and Skills: a zero value there
// stays, and builtin.Register and the worker apply their defaults (the
// default command timeout depends on the maximum one, for one). It is
// idempotent.
func (c *Config) ApplyDefaults() {
	c.QueueGroup = or(c.QueueGroup, DefaultQueueGroup)
	if c.GracePeriod == 0 && !c.src.has("grace_period") {
		c.GracePeriod = DefaultGracePeriod
	}
	c.LogFormat = or(c.LogFormat, DefaultLogFormat)
	c.LogLevel = or(c.LogLevel, DefaultLogLevel)
	c.Embedded.Listen = or(c.Embedded.Listen, DefaultListen)
	c.Embedded.StoreDir = or(c.Embedded.StoreDir, filepath.Join(DataDir(), "jetstream"))
	c.Builtins.Workspace = or(c.Builtins.Workspace, filepath.Join(DataDir(), "workspace"))
	c.State.Groups = or(c.State.Groups, GroupsKV)
	c.State.SessionTTL = or(c.State.SessionTTL, DefaultSessionTTL)
	c.State.MaxSessions = or(c.State.MaxSessions, DefaultMaxStoredSessions)
	c.State.ResultTTL = or(c.State.ResultTTL, time.Hour)
	c.Durable.AckWait = or(c.Durable.AckWait, 30*time.Second)
	c.Durable.MaxDeliver = or(c.Durable.MaxDeliver, 3)
	for i := range c.MCPServers {
		c.MCPServers[i] = c.MCPServers[i].WithDefaults()
	}
	if p := c.Permissions; p != nil {
		p.Mode = or(p.Mode, string(permission.ModeDefault))
		p.CheckTimeout = or(p.CheckTimeout, permission.DefaultCheckTimeout)
	}
	for i := range c.Middleware.RateLimits {
		r := &c.Middleware.RateLimits[i]
		r.Key = or(r.Key, KeySession)
		if r.Burst == 0 && r.Rate > 0 && r.Rate < math.MaxInt32 {
			r.Burst = max(1, int(math.Ceil(r.Rate)))
		}
	}
}

// WorkingDirs are the permission checks' working directories:
// permissions.working_dirs, or else the workspace of the built-in tools
// (absolute), worked out when asked so that a workspace given after the
// file was read (the worker's --workspace) counts.
func (c *Config) WorkingDirs() []string {
	if c.Permissions != nil && len(c.Permissions.WorkingDirs) > 0 {
		return c.Permissions.WorkingDirs
	}
	ws := c.Builtins.Workspace
	if a, err := filepath.Abs(ws); err == nil {
		ws = a
	}
	return []string{ws}
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// InstanceName returns Instance, or "<hostname>-<pid>" when it is empty
// (characters of the hostname outside [A-Za-z0-9_-] become '-').
func (c *Config) InstanceName() string {
	if c.Instance != "" {
		return c.Instance
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	host = strings.Map(func(r rune) rune {
		if toolkit.ValidName(string(r)) {
			return r
		}
		return '-'
	}, host)
	return host + "-" + strconv.Itoa(os.Getpid())
}

// ToolkitGroups returns the configured groups for toolkit.AddGroup.
func (c *Config) ToolkitGroups() []toolkit.Group {
	out := make([]toolkit.Group, len(c.Groups))
	for i, g := range c.Groups {
		out[i] = toolkit.Group{Name: g.Name, Description: g.Description, Instructions: g.Instructions, Active: g.Active}
	}
	return out
}

// BuiltinConfig returns the configuration for builtin.Register.
func (c *Config) BuiltinConfig() builtin.Config {
	b := c.Builtins
	cfg := builtin.Config{
		Workspace:            b.Workspace,
		SharedWorkspace:      b.SharedWorkspace,
		PerSessionWorkspace:  b.PerSessionWorkspace,
		MaxSessionWorkspaces: b.MaxSessionWorkspaces,
		Shell:                b.Shell,
		Python:               b.Python,
		DefaultTimeout:       b.DefaultTimeout,
		MaxTimeout:           b.MaxTimeout,
		MaxOutputBytes:       b.MaxOutputBytes,
		MaxFileBytes:         b.MaxFileBytes,
	}
	if b.Tools != nil {
		cfg.Tools = make([]builtin.Tool, len(b.Tools))
		for i, t := range b.Tools {
			cfg.Tools[i] = builtin.Tool{Name: t.Name, Group: t.Group}
		}
	}
	return cfg
}

// Load reads, parses and validates a config file, which must be a
// regular file of at most MaxFileBytes (a FIFO, a device or a pipe such
// as /dev/stdin is refused: Parse takes a config held in memory).
// Paths in it (workspace, store_dir, credential and TLS files, skill
// directories, MCP working directories) starting "~/" are below the home
// directory (not "~user/"); other relative ones are made absolute,
// relative to the file's directory.
func Load(path string) (*Config, error) {
	data, err := regularfile.Read(path, MaxFileBytes)
	if err != nil {
		reason := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		if errors.Is(err, os.ErrNotExist) {
			reason = "no such file"
		}
		return nil, Errors{{File: path, Reason: "cannot read the config file: " + reason}}
	}
	c, typeErrs, err := decode(path, data)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, Errors{{File: path, Reason: "cannot locate the config file: " + err.Error()}}
	}
	c.resolvePaths(dir)
	return c.finish(typeErrs)
}

// MaxFileBytes is the largest config file Load reads, and the largest
// file (credentials, TLS, the embedded server's config) a config may name.
const MaxFileBytes = 1 << 20

// Parse parses and validates a config held in memory; name is used in
// error messages. Paths starting "~/" are below the home directory;
// other relative paths stay relative to the working directory.
// An empty document is the default configuration.
func Parse(name string, data []byte) (*Config, error) {
	c, typeErrs, err := decode(name, data)
	if err != nil {
		return nil, err
	}
	c.resolvePaths("")
	return c.finish(typeErrs)
}

// expandHome is p with a leading "~" (alone or before a separator) made
// the home directory; p itself when there is none or no home is known.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

// finish applies the defaults and validates, reporting the decoding
// errors (unknown keys, wrong types) together with the validation errors;
// a validation error about a value of the wrong type (which was left
// unset), or on its line, is left out.
func (c *Config) finish(typeErrs Errors) (*Config, error) {
	c.ApplyDefaults()
	all := typeErrs
	if err := c.Validate(); err != nil {
		reported := mismatched(typeErrs)
		for _, e := range err.(Errors) {
			if !reported(e) {
				all = append(all, e)
			}
		}
	}
	if len(all) > 0 {
		slices.SortStableFunc(all, func(a, b *Error) int { return a.Line - b.Line })
		return nil, all
	}
	return c, nil
}

// mismatched returns whether an error is on the line of a value of the
// wrong type among typeErrs, or about its key or below it. It looks the
// lines and the hashes of the keys up (each prefix of an error's path
// hashed as it is read), rather than comparing every error with every
// value: a file of 30000 values of the wrong type and as many invalid
// ones took 19 s.
func mismatched(typeErrs Errors) func(*Error) bool {
	seed := maphash.MakeSeed()
	lines := map[int]bool{}
	paths := map[uint64][]string{}
	for _, te := range typeErrs {
		if te.mismatch {
			lines[te.Line] = true
			if te.Path != "" {
				h := maphash.String(seed, te.Path)
				paths[h] = append(paths[h], te.Path)
			}
		}
	}
	return func(e *Error) bool {
		if lines[e.Line] {
			return true
		}
		if len(paths) == 0 {
			return false
		}
		var h maphash.Hash
		h.SetSeed(seed)
		for i := 1; i <= len(e.Path); i++ {
			h.WriteByte(e.Path[i-1])
			if i == len(e.Path) || e.Path[i] == '.' || e.Path[i] == '[' {
				if slices.Contains(paths[h.Sum64()], e.Path[:i]) {
					return true
				}
			}
		}
		return false
	}
}

// decode reads one YAML document strictly. A syntax error, a key given
// twice or null, a mapping of over MaxMappingKeys keys, a document that is not a
// mapping or a second document is fatal (err); unknown keys and values of
// the wrong type are returned as typeErrs, with the rest of the document
// decoded.
func decode(name string, data []byte) (c *Config, typeErrs Errors, err error) {
	src := &source{file: name}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		if e := notUTF8(name, data); e != nil && strings.Contains(err.Error(), "UTF-8") {
			return nil, nil, Errors{e}
		}
		return nil, nil, src.yamlErrors(err)
	}
	src.index(&root)
	if len(src.fatal) > 0 {
		slices.SortStableFunc(src.fatal, func(a, b *Error) int { return a.Line - b.Line })
		return nil, nil, src.fatal
	}
	c = &Config{src: src}
	if root.Kind == 0 { // empty document
		return c, nil, nil
	}
	if doc := &root; len(doc.Content) == 1 && doc.Content[0].Kind != yaml.MappingNode &&
		!(doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
		return nil, nil, Errors{{File: name, Line: doc.Content[0].Line, Reason: "the config must be a mapping of keys to values"}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, nil, src.yamlErrors(err)
		}
		typeErrs = src.yamlErrors(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, nil, Errors{{File: name, Line: extra.Line, Reason: "more than one YAML document; a config file holds one"}}
	}
	return c, typeErrs, nil
}

// resolvePaths expands a leading "~" of the paths to the home directory,
// as a shell does, and makes the relative ones relative to dir (none when
// dir is empty).
func (c *Config) resolvePaths(dir string) {
	abs := func(p *string) {
		*p = expandHome(*p)
		if dir != "" && *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&c.NATS.Credentials)
	abs(&c.NATS.NKeySeed)
	abs(&c.NATS.TLS.CA)
	abs(&c.NATS.TLS.Cert)
	abs(&c.NATS.TLS.Key)
	abs(&c.Embedded.StoreDir)
	abs(&c.Embedded.ServerConfig)
	abs(&c.Builtins.Workspace)
	for i := range c.Skills {
		abs(&c.Skills[i].Dir)
	}
	for i := range c.MCPServers {
		abs(&c.MCPServers[i].Cwd)
	}
	if c.Permissions != nil {
		for i := range c.Permissions.WorkingDirs {
			abs(&c.Permissions.WorkingDirs[i])
		}
	}
}

// String renders the config as YAML, for logs: passwords, tokens, MCP
// headers, environment values and OAuth client secrets are masked, and so
// are the secrets of the URLs (a NATS URL's password or token, an MCP
// server URL's password and query values: urlredact).
func (c *Config) String() string {
	cp := *c
	mask := func(s *string) {
		if *s != "" {
			*s = "***"
		}
	}
	mask(&cp.NATS.Password)
	mask(&cp.NATS.Token)
	cp.NATS.URLs = slices.Clone(cp.NATS.URLs)
	for i, u := range cp.NATS.URLs {
		cp.NATS.URLs[i] = urlredact.URL(u)
	}
	cp.MCPServers = slices.Clone(cp.MCPServers)
	for i := range cp.MCPServers {
		s := &cp.MCPServers[i]
		if s.URL != "" {
			s.URL = urlredact.URL(s.URL)
		}
		s.Env, s.Headers = maskValues(s.Env), maskValues(s.Headers)
		if s.OAuth != nil {
			o := *s.OAuth
			mask(&o.ClientSecret)
			mask(&o.IdPClientSecret)
			s.OAuth = &o
		}
	}
	b, err := yaml.Marshal(&cp)
	if err != nil {
		return fmt.Sprintf("config: %v", err)
	}
	return string(b)
}

func maskValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = "***"
	}
	return out
}
