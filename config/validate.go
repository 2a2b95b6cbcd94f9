package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/regularfile"
	"github.com/toolbus/toolbus/internal/urlredact"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// MaxNameLen bounds an instance name and a queue group (as
// wire.MaxCallIDLen bounds a call id and a caller identity).
const MaxNameLen = wire.MaxCallIDLen

// checker collects the problems of one config.
type checker struct {
	c    *Config
	errs Errors
}

func (k *checker) fail(path, format string, args ...any) {
	k.errs = append(k.errs, k.c.Errorf(path, format, args...))
}

// Errorf is an Error about path, at its place in the file the config was
// read from: for checks made after the flags applied.
func (c *Config) Errorf(path, format string, args ...any) *Error {
	e := &Error{Path: path, Reason: fmt.Sprintf(format, args...)}
	if c.src != nil {
		e.File, e.Line = c.src.file, c.src.line(path)
	}
	return e
}

// Validate checks the config and returns Errors naming every problem
// (file, line, key path, reason), or nil. Unset values are valid: they
// mean their defaults. Besides the values themselves it checks that
// references resolve (a tool's or server's group is declared, or basic,
// or exec for the built-in shell and Python tools) and that the NATS
// credential and TLS files exist. Skill directories are not required to
// exist: a worker starts without a missing skill directory and warns.
func (c *Config) Validate() error {
	k := &checker{c: c}
	// Both go into NATS protocol lines, which the server bounds (4 KiB by
	// default): a longer one is refused at connect, and retried.
	switch {
	case len(c.Instance) > MaxNameLen:
		k.fail("instance", "an instance name of %d bytes: at most %d (it appears in NATS subjects)", len(c.Instance), MaxNameLen)
	case c.Instance != "" && !toolkit.ValidName(c.Instance):
		k.fail("instance", "invalid instance name %q: use letters, digits, '_' and '-' (it may appear in NATS subjects)", c.Instance)
	}
	switch {
	case len(c.QueueGroup) > MaxNameLen:
		k.fail("queue_group", "a queue group of %d bytes: at most %d (it appears in NATS subscriptions)", len(c.QueueGroup), MaxNameLen)
	case c.QueueGroup != "" && !toolkit.ValidName(c.QueueGroup):
		k.fail("queue_group", "invalid queue group %q: use letters, digits, '_' and '-' (the worker refuses anything else)", c.QueueGroup)
	}
	k.nonNegative("grace_period", c.GracePeriod)
	k.oneOf("log_format", c.LogFormat, "text", "json")
	k.oneOf("log_level", c.LogLevel, "debug", "info", "warn", "error")
	k.oneOf("log_calls.success", c.LogCalls.Success, "info", "debug", "off")
	if c.LogCalls.Sample < 0 {
		k.fail("log_calls.sample", "negative sample %d: log one in this many successful calls (1 or more)", c.LogCalls.Sample)
	}
	k.nats()
	k.embedded()
	groups := k.groups()
	k.builtins(groups)
	k.mcpServers(groups)
	k.skills(groups)
	k.middleware()
	k.permissions()
	k.state()
	if len(k.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(k.errs, func(a, b *Error) int { return a.Line - b.Line })
	return k.errs
}

func (k *checker) nonNegative(path string, d time.Duration) {
	if d < 0 {
		k.fail(path, "negative duration %v", d)
	}
}

// ttl checks a bucket TTL: JetStream refuses a max age under 100ms.
func (k *checker) ttl(path string, d time.Duration) {
	if d > 0 && d < 100*time.Millisecond {
		k.fail(path, "%v is too short: JetStream keeps entries at least 100ms", d)
	}
}

func (k *checker) oneOf(path, v string, allowed ...string) {
	if v != "" && !slices.Contains(allowed, v) {
		k.fail(path, "invalid value %s: want one of %s", quoted(v), strings.Join(allowed, ", "))
	}
}

func (k *checker) fileExists(path, file string) {
	if file == "" {
		return
	}
	fi, err := os.Stat(file)
	switch {
	case err != nil && os.IsNotExist(err):
		k.fail(path, "file %s does not exist", file)
	case err != nil:
		k.fail(path, "file %s cannot be used: %v", file, err)
	case fi.IsDir():
		k.fail(path, "%s is a directory, not a file", file)
	case !fi.Mode().IsRegular():
		k.fail(path, "%s is %s, not a regular file", file, regularfile.Kind(fi.Mode()))
	case fi.Size() > MaxFileBytes:
		k.fail(path, "%s is %d bytes, over the limit of %d", file, fi.Size(), MaxFileBytes)
	}
}

func (k *checker) nats() {
	n := k.c.NATS
	for i, u := range n.URLs {
		if err := checkURL(u, "nats", "tls", "ws", "wss"); err != nil {
			k.fail(fmt.Sprintf("nats.urls[%d]", i), "invalid URL %s: %v", quoted(urlredact.URL(u)), err)
		}
	}
	// The errors about two keys are reported on one that is set, so
	// that they name its line, or the flag or variable that set it.
	var ways []string
	var last string
	if n.Credentials != "" {
		ways, last = append(ways, "credentials"), "nats.credentials"
	}
	if n.NKeySeed != "" {
		ways, last = append(ways, "nkey_seed"), "nats.nkey_seed"
	}
	if n.User != "" || n.Password != "" {
		ways, last = append(ways, "user/password"), "nats.user"
		if n.User == "" {
			last = "nats.password"
		}
	}
	if n.Token != "" {
		ways, last = append(ways, "token"), "nats.token"
	}
	if len(ways) > 1 {
		k.fail(last, "more than one way to authenticate (%s): choose one", strings.Join(ways, ", "))
	}
	if (n.User == "") != (n.Password == "") {
		if n.User == "" {
			k.fail("nats.password", "a password needs a user")
		} else {
			k.fail("nats.user", "a user needs a password")
		}
	}
	k.fileExists("nats.credentials", n.Credentials)
	k.fileExists("nats.nkey_seed", n.NKeySeed)
	k.fileExists("nats.tls.ca", n.TLS.CA)
	k.fileExists("nats.tls.cert", n.TLS.Cert)
	k.fileExists("nats.tls.key", n.TLS.Key)
	switch {
	case n.TLS.Cert != "" && n.TLS.Key == "":
		k.fail("nats.tls.cert", "a client certificate needs its key (nats.tls.key, --tls-key or NATS_KEY)")
	case n.TLS.Key != "" && n.TLS.Cert == "":
		k.fail("nats.tls.key", "a client key needs its certificate (nats.tls.cert, --tls-cert or NATS_CERT)")
	}
	if n.Identity != "" && !wire.ValidIdentity(n.Identity) {
		k.fail("nats.identity", "invalid identity %s: it must be 1-%d characters of [A-Za-z0-9_-]", quoted(n.Identity), wire.MaxCallIDLen)
	}
}

// checkURL accepts a URL with one of the schemes, or host:port alone. Its
// error does not quote raw, which may carry a password: the caller names
// the URL redacted.
func checkURL(raw string, schemes ...string) error {
	if raw == "" {
		return fmt.Errorf("empty")
	}
	if !strings.Contains(raw, "://") {
		raw = schemes[0] + "://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return urlParseError(err)
	}
	if !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("scheme %s is not one of %s", quoted(u.Scheme), strings.Join(schemes, ", "))
	}
	if u.Host == "" {
		return fmt.Errorf("no host")
	}
	switch {
	case strings.HasPrefix(u.Host, "[") && strings.HasSuffix(u.Host, "]"):
		// An IPv6 literal without a port: nats.go dials the default one.
		if _, err := netip.ParseAddr(u.Hostname()); err != nil {
			return fmt.Errorf("invalid host %s: want host, host:port, [IPv6] or [IPv6]:port", quoted(u.Host))
		}
	case strings.Contains(u.Host, ":"):
		// url.Parse takes "a::" for a host (Port is empty), which only
		// fails when the connection is dialled; "a:", an empty port, is
		// refused with it.
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
			return fmt.Errorf("invalid host %s: want host, host:port, [IPv6] or [IPv6]:port", quoted(u.Host))
		}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("invalid port %s", quoted(p))
		}
	}
	return nil
}

func (k *checker) embedded() {
	if l := k.c.Embedded.Listen; l != "" {
		host, port, err := net.SplitHostPort(l)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil:
			k.fail("embedded.listen", "invalid address %s: want host:port, e.g. 127.0.0.1:4222", quoted(l))
		case perr != nil || n < 0 || n > 65535:
			k.fail("embedded.listen", "invalid port %s in %s", quoted(port), quoted(l))
		case host != "" && net.ParseIP(host) == nil && host != "localhost":
			k.fail("embedded.listen", "invalid host %s in %s: want an IP address or localhost", quoted(host), quoted(l))
		}
	}
	k.fileExists("embedded.server_config", k.c.Embedded.ServerConfig)
}

// groups checks the declared groups and returns the names a tool may be
// put in.
func (k *checker) groups() map[string]bool {
	known := map[string]bool{toolkit.BasicGroup: true}
	for i, g := range k.c.Groups {
		p := fmt.Sprintf("groups[%d]", i)
		switch {
		case g.Name == "":
			k.fail(p, "a group needs a name")
		case g.Name == toolkit.BasicGroup:
			k.fail(p+".name", "%s is implicit and always active; it cannot be declared", quoted(g.Name))
		case !toolkit.ValidName(g.Name):
			k.fail(p+".name", "invalid group name %s: use letters, digits, '_' and '-'", quoted(g.Name))
		case len(g.Name) > toolkit.MaxNameLen:
			k.fail(p+".name", "a group name of %d bytes: at most %d", len(g.Name), toolkit.MaxNameLen)
		case known[g.Name]:
			k.fail(p+".name", "duplicate group %s", quoted(g.Name))
		}
		if g.Description == "" {
			k.fail(p+".description", "group %s needs a description (the model reads it)", quoted(g.Name))
		}
		known[g.Name] = true
	}
	return known
}

func (k *checker) group(path, g string, known map[string]bool) {
	if g != "" && !known[g] {
		k.fail(path, "group %s is not declared under groups", quoted(g))
	}
}

func (k *checker) builtins(known map[string]bool) {
	b := k.c.Builtins
	seen := map[string]bool{}
	for i, t := range b.Tools {
		p := fmt.Sprintf("builtins.tools[%d]", i)
		switch {
		case t.Name == "":
			k.fail(p, "a tool needs a name (one of %s)", strings.Join(builtin.Names, ", "))
		case !builtin.Known(t.Name):
			k.fail(p+".name", "unknown built-in tool %s: want one of %s", quoted(t.Name), strings.Join(builtin.Names, ", "))
		case seen[t.Name]:
			k.fail(p+".name", "tool %s is listed twice", quoted(t.Name))
		}
		seen[t.Name] = true
		if t.Group != builtin.ExecGroup {
			k.group(p+".group", t.Group, known)
		}
	}
	k.nonNegative("builtins.default_timeout", b.DefaultTimeout)
	k.nonNegative("builtins.max_timeout", b.MaxTimeout)
	if b.DefaultTimeout > 0 && b.DefaultTimeout > cmpDur(b.MaxTimeout, builtin.DefaultMaxTimeout) {
		k.fail("builtins.default_timeout", "%v is above the max timeout %v", b.DefaultTimeout, cmpDur(b.MaxTimeout, builtin.DefaultMaxTimeout))
	}
	if b.MaxOutputBytes < 0 {
		k.fail("builtins.max_output_bytes", "negative size %d", b.MaxOutputBytes)
	}
	if b.MaxFileBytes < 0 {
		k.fail("builtins.max_file_bytes", "negative size %d", b.MaxFileBytes)
	}
}

func cmpDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// mcpServers checks each server with mcp.ServerConfig.Validate (the one
// check of a server's configuration), names and groups across servers
// here.
func (k *checker) mcpServers(known map[string]bool) {
	seen := map[string]bool{}
	for i, s := range k.c.MCPServers {
		p := fmt.Sprintf("mcp_servers[%d]", i)
		if s.Name != "" && seen[s.Name] {
			k.fail(p+".name", "duplicate MCP server %s", quoted(s.Name))
		}
		seen[s.Name] = true
		var joined interface{ Unwrap() []error }
		if err := s.Validate(); errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				var ce *mcp.ConfigError
				if !errors.As(e, &ce) {
					k.fail(p, "%v", e)
					continue
				}
				if ce.Field == "" {
					k.fail(p, "%s", ce.Reason)
				} else {
					k.fail(p+"."+ce.Field, "%s", ce.Reason)
				}
			}
		}
		if toolkit.ValidName(s.Group) && len(s.Group) <= toolkit.MaxNameLen { // else Validate said so
			k.group(p+".group", s.Group, known)
		}
	}
}

func (k *checker) skills(known map[string]bool) {
	for i, s := range k.c.Skills {
		p := fmt.Sprintf("skills[%d]", i)
		if s.Dir == "" {
			k.fail(p, "a skills entry needs a dir")
		}
		k.group(p+".group", s.Group, known)
	}
}

func (k *checker) middleware() {
	m := k.c.Middleware
	k.nonNegative("middleware.default_timeout", m.DefaultTimeout)
	for name, d := range m.Timeouts {
		p := "middleware.timeouts." + name
		if !toolkit.ValidName(name) {
			k.fail(p, "invalid tool name %s", quoted(name))
		}
		if d <= 0 {
			k.fail(p, "the timeout must be positive, got %v", d)
		}
	}
	for i, r := range m.RateLimits {
		p := fmt.Sprintf("middleware.rate_limits[%d]", i)
		if !(r.Rate > 0) || math.IsInf(r.Rate, 0) {
			k.fail(p+".rate", "the rate must be a positive number of calls per second, got %v", r.Rate)
		}
		if r.Burst < 0 {
			k.fail(p+".burst", "negative burst %d", r.Burst)
		}
		if r.MaxKeys < 0 {
			k.fail(p+".max_keys", "negative bound %d: want the most buckets kept, or 0 for the default (%d)", r.MaxKeys, middleware.DefaultRateLimitKeys)
		}
		k.oneOf(p+".key", r.Key, KeySession, KeyTool, KeyGlobal)
		for j, t := range r.Tools {
			if !toolkit.ValidName(t) {
				k.fail(fmt.Sprintf("%s.tools[%d]", p, j), "invalid tool name %s", quoted(t))
			}
		}
	}
	if m.MaxInFlight < 0 {
		k.fail("middleware.max_in_flight", "negative limit %d", m.MaxInFlight)
	} else if m.MaxInFlight > bus.MaxMaxInFlight {
		k.fail("middleware.max_in_flight", "limit %d is more than a worker runs at once: at most %d", m.MaxInFlight, bus.MaxMaxInFlight)
	}
	if m.MaxResultBytes < -1 {
		k.fail("middleware.max_result_bytes", "negative size %d: want a size in bytes, 0 for the default or -1 for none", m.MaxResultBytes)
	}
}

func (k *checker) state() {
	st := k.c.State
	switch st.Groups {
	case GroupsKV, GroupsMemory:
	default:
		k.fail("state.groups", "unknown group state %s: want kv or memory", quoted(st.Groups))
	}
	if st.SessionTTL < 0 {
		k.fail("state.session_ttl", "negative TTL %v", st.SessionTTL)
	}
	if st.MaxSessions < -1 {
		k.fail("state.max_sessions", "negative count %d: give a number of sessions, or -1 for no bound", st.MaxSessions)
	}
	if st.ResultTTL < 0 {
		k.fail("state.result_ttl", "negative TTL %v", st.ResultTTL)
	}
	k.ttl("state.session_ttl", st.SessionTTL)
	k.ttl("state.result_ttl", st.ResultTTL)
	d := k.c.Durable
	if d.AckWait < time.Second {
		k.fail("durable.ack_wait", "%v is too short: a worker confirms a running call every third of it; give at least 1s", d.AckWait)
	}
	if d.MaxDeliver < 1 {
		k.fail("durable.max_deliver", "must be at least 1, got %d", d.MaxDeliver)
	}
	if d.Replicas < 0 || d.Replicas > 5 {
		k.fail("durable.replicas", "must be 1 to 5 (unset: --kv-replicas), got %d", d.Replicas)
	}
	for i, t := range d.Tools {
		if !toolkit.ValidName(t) {
			k.fail(fmt.Sprintf("durable.tools[%d]", i), "invalid tool name %s", quoted(t))
		}
	}
	if st.Groups == GroupsMemory && k.c.Permissions != nil {
		k.fail("state.groups", "memory group state leaves JetStream out, but the permissions section keeps its state in JetStream KV: use kv, or drop permissions")
	}
}

func (k *checker) permissions() {
	p := k.c.Permissions
	if p == nil {
		return
	}
	if p.Mode != "" {
		if _, err := permission.ParseMode(p.Mode); err != nil {
			k.fail("permissions.mode", "invalid mode %s: want one of default, accept_edits, explore, bypass, dont_ask", quoted(p.Mode))
		}
	}
	for _, list := range []struct {
		key   string
		specs []string
		b     permission.Behavior
	}{{"allow", p.Allow, permission.Allow}, {"deny", p.Deny, permission.Deny}, {"ask", p.Ask, permission.Ask}} {
		for i, spec := range list.specs {
			if _, err := permission.ParseRule(spec, list.b); err != nil {
				// Its error names the rule again, whole.
				why := strings.TrimPrefix(err.Error(), fmt.Sprintf("permission: invalid rule %q: ", spec))
				k.fail(fmt.Sprintf("permissions.%s[%d]", list.key, i), "invalid rule %s: %s (write TOOL or TOOL:PATTERN)", quoted(spec), why)
			}
		}
	}
	for i, d := range p.WorkingDirs {
		if d == "" {
			k.fail(fmt.Sprintf("permissions.working_dirs[%d]", i), "empty directory")
		}
	}
	k.nonNegative("permissions.approval_ttl", p.ApprovalTTL)
	k.ttl("permissions.approval_ttl", p.ApprovalTTL)
	k.nonNegative("permissions.check_timeout", p.CheckTimeout)
	if p.KVReplicas < 0 || p.KVReplicas > 5 {
		k.fail("permissions.kv_replicas", "replicas must be 1 to 5, got %d", p.KVReplicas)
	}
}

// urlParseError is url.Parse's error without the URL it quotes.
func urlParseError(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
