package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/config"
)

// Each bad config is rejected with exactly the error given: file, line,
// key path and reason.
func TestRejected(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		// Decoding.
		{"unknown top-level key", "queue_grup: x\n",
			`w.yaml:1: queue_grup: unknown key "queue_grup" (did you mean queue_group? allowed here: instance, queue_group, grace_period, log_format, log_level, log_calls, nats, embedded, groups, builtins, mcp_servers, skills, middleware, permissions, state, durable)`},
		{"unknown nested key", "builtins:\n  tools:\n    - name: echo\n      grop: x\n",
			`w.yaml:4: builtins.tools[0].grop: unknown key "grop" (did you mean group? allowed here: name, group)`},
		{"unknown key near an allowed one", "nats:\n  url: nats://x:4222\n",
			`w.yaml:2: nats.url: unknown key "url" (did you mean urls? allowed here: urls, credentials, nkey_seed, user, password, token, tls, identity)`},
		{"short unknown key two edits from an allowed one", "permissions:\n  ab: x\n",
			`w.yaml:2: permissions.ab: unknown key "ab" (allowed here: mode, allow, deny, ask, working_dirs, approval_ttl, check_timeout, kv_replicas)`},
		{"unknown key in a map value", "nats:\n  tls:\n    cafile: x\n",
			`w.yaml:3: nats.tls.cafile: unknown key "cafile" (allowed here: ca, cert, key)`},
		{"duration without unit", "grace_period: 30\n",
			`w.yaml:1: grace_period: invalid value "30": want a duration such as 30s, 1m30s or 2h`},
		{"duration nonsense", "middleware:\n  default_timeout: soon\n",
			`w.yaml:2: middleware.default_timeout: invalid value "soon": want a duration such as 30s, 1m30s or 2h`},
		{"number expected", "middleware:\n  max_in_flight: many\n",
			`w.yaml:2: middleware.max_in_flight: invalid value "many": want a whole number`},
		{"bool expected", "groups:\n  - name: g\n    description: d\n    active: maybe\n",
			`w.yaml:4: groups[0].active: invalid value "maybe": want true or false`},
		{"list expected", "groups: exec\n",
			`w.yaml:1: groups: invalid value "exec": want a list`},
		{"mapping expected", "nats: [a]\n",
			`w.yaml:1: nats: invalid value (a list): want a mapping`},
		{"name for a mapping of a name", "builtins:\n  tools: [execute_shell_command]\n",
			`w.yaml:2: builtins.tools[0]: invalid value "execute_shell_command": want a mapping such as {name: execute_shell_command}`},
		{"mapping expected, block list", "nats:\n  - a\n",
			`w.yaml:2: nats: invalid value (a list): want a mapping`},
		{"long value", "embedded:\n  listen: [1]\ngrace_period: in a little while\n",
			`w.yaml:2: embedded.listen: invalid value (a list): want a string` + "\n" +
				`w.yaml:3: grace_period: invalid value "in a little while": want a duration such as 30s, 1m30s or 2h`},
		{"same bad value twice on a line", "{middleware: {timeouts: {a: x, b: x}}}\n",
			`w.yaml:1: middleware.timeouts.a: invalid value "x": want a duration such as 30s, 1m30s or 2h` + "\n" +
				`w.yaml:1: middleware.timeouts.b: invalid value "x": want a duration such as 30s, 1m30s or 2h`},
		{"bad value beside the same good one", "{instance: soon, grace_period: soon}\n",
			`w.yaml:1: grace_period: invalid value "soon": want a duration such as 30s, 1m30s or 2h`},
		{"lists for mappings on a line", "middleware: {rate_limits: [[1], [2]]}\n",
			`w.yaml:1: middleware.rate_limits[0]: invalid value (a list): want a mapping` + "\n" +
				`w.yaml:1: middleware.rate_limits[1]: invalid value (a list): want a mapping`},
		{"key twice", "queue_group: a\nlog_level: info\nqueue_group: b\n",
			`w.yaml:3: queue_group: key "queue_group" appears twice (first on line 1)`},
		{"key three times", "queue_group: a\nqueue_group: b\nqueue_group: c\nlog_level: loud\n",
			`w.yaml:2: queue_group: key "queue_group" appears twice (first on line 1)` + "\n" +
				`w.yaml:3: queue_group: key "queue_group" appears twice (first on line 1)`},
		{"nested key twice", "nats:\n  tls:\n    ca: a\n    ca: b\n",
			`w.yaml:4: nats.tls.ca: key "ca" appears twice (first on line 3)`},
		{"syntax error", "log_level: info\nqueue_group: a: b\n",
			`w.yaml:2: mapping values are not allowed in this context`},
		// The parser's errors (not the scanner's) name the line yaml.v3
		// reports counted from 0, and none on the first line.
		{"stray colon", "nats:\n  urls: []\n: y\nqueue_group: a\n",
			`w.yaml:3: did not find expected key`},
		{"stray colon on the first line", ": y\n",
			`w.yaml:1: did not find expected key`},
		{"unclosed list", "log_level: info\ninstance: a\ngroups: [1, 2\nqueue_group: a\n",
			`w.yaml:3: did not find expected ',' or ']'`},
		{"tab indentation", "nats:\n\turls: []\n",
			`w.yaml:2: found character that cannot start any token`},
		{"not a mapping", "just text\n",
			`w.yaml:1: the config must be a mapping of keys to values`},
		{"two documents", "queue_group: a\n---\nqueue_group: b\n",
			`w.yaml:2: more than one YAML document; a config file holds one`},

		// Values.
		{"unknown permission mode", "permissions:\n  mode: careful\n",
			`w.yaml:2: permissions.mode: invalid mode "careful": want one of default, accept_edits, explore, bypass, dont_ask`},
		{"permission rule without tool", "permissions:\n  allow: [\":ls\"]\n",
			`w.yaml:2: permissions.allow[0]: invalid rule ":ls": the tool name must match [A-Za-z0-9_-]+ (write TOOL or TOOL:PATTERN)`},
		{"permission rule bad tool name", "permissions:\n  deny: [\"rm -rf\"]\n",
			`w.yaml:2: permissions.deny[0]: invalid rule "rm -rf": the tool name must match [A-Za-z0-9_-]+ (write TOOL or TOOL:PATTERN)`},
		{"negative approval ttl", "permissions:\n  approval_ttl: -1h\n",
			`w.yaml:2: permissions.approval_ttl: negative duration -1h0m0s`},
		{"negative check timeout", "permissions:\n  check_timeout: -1s\n",
			`w.yaml:2: permissions.check_timeout: negative duration -1s`},
		{"check timeout without a unit", "permissions:\n  check_timeout: 30\n",
			`w.yaml:2: permissions.check_timeout: invalid value "30": want a duration such as 30s, 1m30s or 2h`},
		{"check timeout too large", "permissions:\n  check_timeout: 3000000h\n",
			`w.yaml:2: permissions.check_timeout: invalid value "3000000h": want a duration such as 30s, 1m30s or 2h, not one this large`},
		{"permission replicas", "permissions:\n  kv_replicas: 7\n",
			`w.yaml:2: permissions.kv_replicas: replicas must be 1 to 5, got 7`},
		{"null key", "~: 1\n", `w.yaml:1: a key that is null ("~", "null" or nothing): keys are names`},
		{"null key in a list item", "groups:\n  - name: g\n    null: x\n", `w.yaml:3: groups[0]: a key that is null ("~", "null" or nothing): keys are names`},
		{"missing key", "builtins:\n  ? \n  : 1\n", `w.yaml:2: builtins: a key that is null ("~", "null" or nothing): keys are names`},
		{"empty key", "\"\": 1\n",
			`w.yaml:1: unknown key "" (allowed here: instance, queue_group, grace_period, log_format, log_level, log_calls, nats, embedded, groups, builtins, mcp_servers, skills, middleware, permissions, state, durable)`},
		{"unknown permission key", "permissions:\n  allowed: [echo]\n",
			`w.yaml:2: permissions.allowed: unknown key "allowed" (did you mean allow? allowed here: mode, allow, deny, ask, working_dirs, approval_ttl, check_timeout, kv_replicas)`},
		{"negative grace period", "grace_period: -5s\n", `w.yaml:1: grace_period: negative duration -5s`},
		{"negative middleware timeout", "middleware:\n  default_timeout: -1m\n", `w.yaml:2: middleware.default_timeout: negative duration -1m0s`},
		{"zero per-tool timeout", "middleware:\n  timeouts:\n    sleep: 0s\n", `w.yaml:3: middleware.timeouts.sleep: the timeout must be positive, got 0s`},
		{"bad tool name in timeouts", "middleware:\n  timeouts:\n    a.b: 1s\n", `w.yaml:3: middleware.timeouts.a.b: invalid tool name "a.b"`},
		{"duration too large", "grace_period: 99999999h\n",
			`w.yaml:1: grace_period: invalid value "99999999h": want a duration such as 30s, 1m30s or 2h, not one this large`},
		{"number too large", "durable:\n  max_deliver: 99999999999999999999\n",
			`w.yaml:2: durable.max_deliver: invalid value "99999999999999999999": want a whole number, not one this large`},
		{"log format", "log_format: xml\n", `w.yaml:1: log_format: invalid value "xml": want one of text, json`},
		{"log calls", "log_calls:\n  success: loud\n", `w.yaml:2: log_calls.success: invalid value "loud": want one of info, debug, off`},
		{"log calls sample", "log_calls:\n  sample: -2\n", `w.yaml:2: log_calls.sample: negative sample -2: log one in this many successful calls (1 or more)`},
		{"log level", "\nlog_level: loud\n", `w.yaml:2: log_level: invalid value "loud": want one of debug, info, warn, error`},
		{"queue group", "queue_group: a b\n", `w.yaml:1: queue_group: invalid queue group "a b": use letters, digits, '_' and '-' (the worker refuses anything else)`},
		{"queue group with a dot", "queue_group: a.b\n", `w.yaml:1: queue_group: invalid queue group "a.b": use letters, digits, '_' and '-' (the worker refuses anything else)`},
		{"long instance", "instance: " + strings.Repeat("a", 129) + "\n",
			`w.yaml:1: instance: an instance name of 129 bytes: at most 128 (it appears in NATS subjects)`},
		{"long queue group", "queue_group: " + strings.Repeat("a", 129) + "\n",
			`w.yaml:1: queue_group: a queue group of 129 bytes: at most 128 (it appears in NATS subscriptions)`},
		{"long mcp server name", "mcp_servers:\n  - name: " + strings.Repeat("a", 248) + "\n    command: x\n",
			`w.yaml:2: mcp_servers[0].name: a server name of 248 bytes: at most 247, for its tools' names (mcp__NAME__TOOL) to fit in 255`},
		{"instance", "instance: w.1\n", `w.yaml:1: instance: invalid instance name "w.1": use letters, digits, '_' and '-' (it may appear in NATS subjects)`},
		{"invalid group name", "groups:\n  - name: my tools\n    description: d\n",
			`w.yaml:2: groups[0].name: invalid group name "my tools": use letters, digits, '_' and '-'`},
		{"long group name", "groups:\n  - name: " + strings.Repeat("g", 300) + "\n    description: d\n",
			`w.yaml:2: groups[0].name: a group name of 300 bytes: at most 255`},
		{"long mcp server group", "mcp_servers:\n  - name: a\n    command: x\n    group: " + strings.Repeat("g", 300) + "\n",
			`w.yaml:4: mcp_servers[0].group: a group name of 300 bytes: at most 255`},
		{"duplicate group", "groups:\n  - name: g\n    description: d\n  - name: g\n    description: e\n",
			`w.yaml:4: groups[1].name: duplicate group "g"`},
		{"basic declared", "groups:\n  - name: basic\n    description: d\n",
			`w.yaml:2: groups[0].name: "basic" is implicit and always active; it cannot be declared`},
		{"group without name", "groups:\n  - description: d\n", `w.yaml:2: groups[0]: a group needs a name`},
		{"group without description", "groups:\n  - name: g\n",
			`w.yaml:2: groups[0].description: group "g" needs a description (the model reads it)`},
		{"unknown built-in", "builtins:\n  tools:\n    - name: rm\n",
			`w.yaml:3: builtins.tools[0].name: unknown built-in tool "rm": want one of echo, sleep, view_text_file, write_text_file, insert_text_file, execute_shell_command, execute_python_code`},
		{"built-in twice", "builtins:\n  tools:\n    - name: echo\n    - name: echo\n",
			`w.yaml:4: builtins.tools[1].name: tool "echo" is listed twice`},
		{"built-in in an undeclared group", "builtins:\n  tools:\n    - name: echo\n      group: fun\n",
			`w.yaml:4: builtins.tools[0].group: group "fun" is not declared under groups`},
		{"built-in without name", "builtins:\n  tools:\n    - group: basic\n",
			`w.yaml:3: builtins.tools[0]: a tool needs a name (one of echo, sleep, view_text_file, write_text_file, insert_text_file, execute_shell_command, execute_python_code)`},
		{"built-in default above max", "builtins:\n  default_timeout: 2h\n",
			`w.yaml:2: builtins.default_timeout: 2h0m0s is above the max timeout 1h0m0s`},
		{"negative output limit", "builtins:\n  max_output_bytes: -1\n", `w.yaml:2: builtins.max_output_bytes: negative size -1`},
		{"bad nats url", "nats:\n  urls: [nats://a:4222, 'http://b:80']\n",
			`w.yaml:2: nats.urls[1]: invalid URL "http://b:80": scheme "http" is not one of nats, tls, ws, wss`},
		{"bad nats port", "nats:\n  urls:\n    - nats://a:99999\n", `w.yaml:3: nats.urls[0]: invalid URL "nats://a:99999": invalid port "99999"`},
		{"nats host with colons", "nats:\n  urls:\n    - 'garbage::'\n", `w.yaml:3: nats.urls[0]: invalid URL "garbage::": invalid host "garbage::": want host, host:port, [IPv6] or [IPv6]:port`},
		{"nats host with empty port", "nats:\n  urls:\n    - 'nats://a:'\n", `w.yaml:3: nats.urls[0]: invalid URL "nats://a:": invalid host "a:": want host, host:port, [IPv6] or [IPv6]:port`},
		{"two ways to authenticate", "nats:\n  token: t\n  user: u\n  password: p\n",
			`w.yaml:2: nats.token: more than one way to authenticate (user/password, token): choose one`},
		{"user without password", "nats:\n  user: u\n", `w.yaml:2: nats.user: a user needs a password`},
		{"missing credentials file", "nats:\n  credentials: /nonexistent/x.creds\n",
			`w.yaml:2: nats.credentials: file /nonexistent/x.creds does not exist`},
		{"cert without key", "nats:\n  tls:\n    cert: testdata/certs/ca.pem\n",
			`w.yaml:3: nats.tls.cert: a client certificate needs its key (nats.tls.key, --tls-key or NATS_KEY)`},
		{"bad listen address", "embedded:\n  listen: localhost\n",
			`w.yaml:2: embedded.listen: invalid address "localhost": want host:port, e.g. 127.0.0.1:4222`},
		{"bad listen host", "embedded:\n  listen: 'example.com:4222'\n",
			`w.yaml:2: embedded.listen: invalid host "example.com" in "example.com:4222": want an IP address or localhost`},
		{"mcp without command or url", "mcp_servers:\n  - name: a\n",
			`w.yaml:2: mcp_servers[0]: give either a command (stdio) or a url (streamable-http, sse), or set transport`},
		{"mcp bad transport", "mcp_servers:\n  - name: a\n    transport: grpc\n    url: http://x\n",
			`w.yaml:3: mcp_servers[0].transport: invalid transport "grpc": want stdio, streamable-http or sse`},
		{"mcp stdio with url", "mcp_servers:\n  - name: a\n    transport: stdio\n    command: x\n    url: http://x\n",
			`w.yaml:5: mcp_servers[0].url: a stdio server has no url`},
		{"mcp http with command", "mcp_servers:\n  - name: a\n    transport: sse\n    url: http://x/sse\n    command: x\n",
			`w.yaml:2: mcp_servers[0]: a sse server is reached by url: command, args, env and cwd are for stdio servers`},
		{"mcp bad url", "mcp_servers:\n  - name: a\n    url: ftp://x\n",
			`w.yaml:3: mcp_servers[0].url: invalid URL "ftp://x": scheme "ftp" is not one of http, https`},
		{"mcp bad name", "mcp_servers:\n  - name: my.server\n    command: x\n",
			`w.yaml:2: mcp_servers[0].name: invalid server name "my.server": use letters, digits, '_' and '-'`},
		{"mcp duplicate", "mcp_servers:\n  - name: a\n    command: x\n  - name: a\n    command: y\n",
			`w.yaml:4: mcp_servers[1].name: duplicate MCP server "a"`},
		{"mcp empty name", "mcp_servers:\n  - name: \"\"\n    command: x\n", `w.yaml:2: mcp_servers[0]: an MCP server needs a name`},
		{"mcp name with subject characters", "mcp_servers:\n  - name: \"a.*>\"\n    command: x\n",
			`w.yaml:2: mcp_servers[0].name: invalid server name "a.*>": use letters, digits, '_' and '-'`},
		{"mcp name not UTF-8", "mcp_servers:\n  - name: a\n    command: x\n  - name: \"b\xffc\"\n    command: y\n",
			`w.yaml:4: the file is not UTF-8 text: byte 0xff at column 13 is not UTF-8 (YAML files are UTF-8, or UTF-16 with a byte order mark)`},
		{"not UTF-8 after a multi-byte character", "instance: é\xe9x\n",
			`w.yaml:1: the file is not UTF-8 text: byte 0xe9 at column 12 is not UTF-8 (YAML files are UTF-8, or UTF-16 with a byte order mark)`},
		{"mcp bad mode", "mcp_servers:\n  - name: a\n    command: x\n    mode: lazy\n",
			`w.yaml:4: mcp_servers[0].mode: invalid value "lazy": want one of stateful, stateless`},
		{"mcp enabled and disabled", "mcp_servers:\n  - name: a\n    command: x\n    enable_tools: [t1, t2]\n    disable_tools: [t2]\n",
			`w.yaml:5: mcp_servers[0].disable_tools: tool "t2" is both enabled and disabled`},
		{"mcp empty enable_tools", "mcp_servers:\n  - name: a\n    command: x\n    enable_tools: []\n",
			`w.yaml:4: mcp_servers[0].enable_tools: empty: it would enable none of the server's tools, as AgentScope's enable_tools=[] does; leave enable_tools out to register them all, or the server out to register none`},
		{"mcp negative timeout", "mcp_servers:\n  - name: a\n    command: x\n    timeout: -1s\n",
			`w.yaml:4: mcp_servers[0].timeout: negative duration -1s`},
		{"mcp undeclared group", "mcp_servers:\n  - name: a\n    command: x\n    group: g\n",
			`w.yaml:4: mcp_servers[0].group: group "g" is not declared under groups`},
		{"skills without dir", "skills:\n  - scan_subdirs: true\n", `w.yaml:2: skills[0]: a skills entry needs a dir`},
		{"zero rate", "middleware:\n  rate_limits:\n    - rate: 0\n",
			`w.yaml:3: middleware.rate_limits[0].rate: the rate must be a positive number of calls per second, got 0`},
		{"NaN rate", "middleware:\n  rate_limits:\n    - rate: .nan\n",
			`w.yaml:3: middleware.rate_limits[0].rate: the rate must be a positive number of calls per second, got NaN`},
		{"infinite rate", "middleware:\n  rate_limits:\n    - rate: .inf\n",
			`w.yaml:3: middleware.rate_limits[0].rate: the rate must be a positive number of calls per second, got +Inf`},
		{"state bound below -1", "state:\n  max_sessions: -2\n",
			`w.yaml:2: state.max_sessions: negative count -2: give a number of sessions, or -1 for no bound`},
		{"result ttl under JetStream's least", "state:\n  result_ttl: 50ms\n",
			`w.yaml:2: state.result_ttl: 50ms is too short: JetStream keeps entries at least 100ms`},
		{"negative rate limit max keys", "middleware:\n  rate_limits:\n    - rate: 1\n      max_keys: -1\n",
			`w.yaml:4: middleware.rate_limits[0].max_keys: negative bound -1: want the most buckets kept, or 0 for the default (65536)`},
		{"bad rate key", "middleware:\n  rate_limits:\n    - rate: 1\n      key: user\n",
			`w.yaml:4: middleware.rate_limits[0].key: invalid value "user": want one of session, tool, global`},
		{"negative in-flight", "middleware:\n  max_in_flight: -1\n", `w.yaml:2: middleware.max_in_flight: negative limit -1`},
		{"huge in-flight", "middleware:\n  max_in_flight: 9223372036854775807\n", `w.yaml:2: middleware.max_in_flight: limit 9223372036854775807 is more than a worker runs at once: at most 1048576`},
		{"result bound below -1", "middleware:\n  max_result_bytes: -2\n",
			`w.yaml:2: middleware.max_result_bytes: negative size -2: want a size in bytes, 0 for the default or -1 for none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("w.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", cfg)
			}
			if err.Error() != tt.want {
				t.Errorf("err =\n%v\nwant\n%s", err, tt.want)
			}
			var ce *config.Error
			if !errors.As(err, &ce) || ce.File != "w.yaml" || ce.Line == 0 {
				t.Errorf("errors.As gives %#v", ce)
			}
		})
	}
}

// Every problem is reported at once, in line order.
func TestRejectedAll(t *testing.T) {
	yaml := "log_level: loud\ngroups:\n  - name: a b\n    description: d\ngrace_period: -1s\n"
	_, err := config.Parse("w.yaml", []byte(yaml))
	want := strings.Join([]string{
		`w.yaml:1: log_level: invalid value "loud": want one of debug, info, warn, error`,
		`w.yaml:3: groups[0].name: invalid group name "a b": use letters, digits, '_' and '-'`,
		`w.yaml:5: grace_period: negative duration -1s`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
	var es config.Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Errorf("Errors = %v", es)
	}
	// Decoding and validation errors together; a value that could not be
	// decoded is not reported again as missing.
	yaml = "groups:\n  - name: [x]\n    description: d\n  - name: g\n  - name: g\n    description: d\nqueue_group: 'a b'\nfoo: 1\n" +
		"mcp_servers:\n  - {name: 'a b', comand: x}\n"
	_, err = config.Parse("w.yaml", []byte(yaml))
	want = strings.Join([]string{
		`w.yaml:2: groups[0].name: invalid value (a list): want a string`,
		`w.yaml:4: groups[1].description: group "g" needs a description (the model reads it)`,
		`w.yaml:5: groups[2].name: duplicate group "g"`,
		`w.yaml:7: queue_group: invalid queue group "a b": use letters, digits, '_' and '-' (the worker refuses anything else)`,
		`w.yaml:8: foo: unknown key "foo" (allowed here: instance, queue_group, grace_period, log_format, log_level, log_calls, nats, embedded, groups, builtins, mcp_servers, skills, middleware, permissions, state, durable)`,
		`w.yaml:10: mcp_servers[0].comand: unknown key "comand" (did you mean command? allowed here: name, transport, command, args, env, cwd, url, headers, mode, session_bound, group, enable_tools, presets, disable_tools, timeout, connect_timeout, protocol_version, serve_resources, log_level, oauth)`,
		`w.yaml:10: mcp_servers[0].name: invalid server name "a b": use letters, digits, '_' and '-'`,
		`w.yaml:10: mcp_servers[0]: give either a command (stdio) or a url (streamable-http, sse), or set transport`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
	yaml = "queue_grup: x\nbuiltins:\n  workspase: y\n"
	_, err = config.Parse("w.yaml", []byte(yaml))
	if err == nil || strings.Count(err.Error(), "unknown key") != 2 {
		t.Errorf("both unknown keys should be reported: %v", err)
	}
}

// Load names the file it read, and checks files relative to it.
func TestLoadRejected(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(path, []byte("nats:\n  urls: [nats://x:4222]\n  nkey_seed: seed.nk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path)
	want := path + ":3: nats.nkey_seed: file " + filepath.Join(dir, "seed.nk") + " does not exist"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// A Config built or changed in code is validated too; its errors have no
// line unless the key came from a file.
func TestValidateInCode(t *testing.T) {
	cfg := config.Default()
	cfg.Groups = append(cfg.Groups, config.Group{Name: "x y", Description: "d"})
	cfg.Middleware.DefaultTimeout = -time.Second
	err := cfg.Validate()
	want := "config: groups[0].name: invalid group name \"x y\": use letters, digits, '_' and '-'\n" +
		"config: middleware.default_timeout: negative duration -1s"
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}

	// A flag overriding a value from a file: the error points at the key.
	cfg, err = config.Parse("w.yaml", []byte("log_level: info\nnats:\n  urls: [nats://a:4222]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.URLs = []string{"bogus://x"}
	err = cfg.Validate()
	if err == nil || err.Error() != `w.yaml:3: nats.urls[0]: invalid URL "bogus://x": scheme "bogus" is not one of nats, tls, ws, wss` {
		t.Fatalf("err = %v", err)
	}
}

// A config file within MaxFileBytes costs memory in proportion to its
// size, however it is shaped (deep nesting under long keys took
// gigabytes), and each of many problems on one line names its own key.
func TestParseBounded(t *testing.T) {
	key := strings.Repeat("k", 90)
	deep := func(n int) string {
		return "instance: " + strings.Repeat("{"+key+": ", n) + "1" + strings.Repeat("}", n) + "\n"
	}
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("{middleware: {rate_limits: [")
		for range n {
			b.WriteString("{rate: x}, ")
		}
		b.WriteString("]}}\n")
		return b.String()
	}
	parse := func(t *testing.T, yaml string) (config.Errors, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := config.Parse("w.yaml", []byte(yaml))
		runtime.ReadMemStats(&after)
		var es config.Errors
		if !errors.As(err, &es) {
			t.Fatalf("err = %v", err)
		}
		return es, after.TotalAlloc - before.TotalAlloc
	}
	for _, tt := range []struct {
		name string
		gen  func(int) string
		n    int
		errs func(n int) int
	}{
		{"deep", deep, 1000, func(int) int { return 1 }},
		{"many problems on a line", many, 2000, func(n int) int { return n }},
		{"deep on a line", func(n int) string {
			return "{instance: " + strings.Repeat("{"+key+": x, b: ", n) + "1" + strings.Repeat("}", n) + ", grace_period: x}\n"
		}, 1000, func(int) int { return 2 }},
		{"wrong types and invalid values", func(n int) string {
			return "middleware:\n  rate_limits:\n" + strings.Repeat("    - {rate: 0}\n", n) + strings.Repeat("    - {rate: x}\n", n)
		}, 300, func(n int) int { return 2 * n }},
		{"one key many times", func(n int) string { return strings.Repeat("queue_group: a\n", n) }, 400, func(n int) int { return n - 1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			es, small := parse(t, tt.gen(tt.n))
			es2, large := parse(t, tt.gen(2*tt.n))
			if len(es) != tt.errs(tt.n) || len(es2) != tt.errs(2*tt.n) {
				t.Fatalf("%d and %d errors, want %d and %d", len(es), len(es2), tt.errs(tt.n), tt.errs(2*tt.n))
			}
			for i, e := range es2 {
				if tt.name == "many problems on a line" && !strings.HasSuffix(e.Path, fmt.Sprintf("[%d].rate", i)) {
					t.Fatalf("error %d is about %s", i, e.Path)
				}
			}
			if tt.name == "deep on a line" && (es2[0].Path != "instance" || es2[1].Path != "grace_period") {
				t.Errorf("errors about %.50s and %.50s, want instance and grace_period", es2[0].Path, es2[1].Path)
			}
			// Twice the size, about twice the memory (four times when
			// quadratic).
			if large > 3*small {
				t.Errorf("%d bytes allocated for %d of YAML, %d for twice that", small, len(tt.gen(tt.n)), large)
			}
		})
	}
}

// A mapping holds at most MaxMappingKeys keys: yaml.v3 compares each key
// of a mapping with every other.
func TestMappingKeysBounded(t *testing.T) {
	timeouts := func(n int) string {
		var b strings.Builder
		b.WriteString("middleware:\n  timeouts:\n")
		for i := range n {
			fmt.Fprintf(&b, "    t%d: 1s\n", i)
		}
		return b.String()
	}
	if _, err := config.Parse("w.yaml", []byte(timeouts(config.MaxMappingKeys))); err != nil {
		t.Fatal(err)
	}
	_, err := config.Parse("w.yaml", []byte(timeouts(config.MaxMappingKeys+1)))
	want := fmt.Sprintf("w.yaml:3: middleware.timeouts: %d keys in one mapping, over the limit of %d", config.MaxMappingKeys+1, config.MaxMappingKeys)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// Names at their limits are valid.
func TestNamesAtTheLimit(t *testing.T) {
	yaml := "instance: " + strings.Repeat("i", config.MaxNameLen) + "\nqueue_group: " + strings.Repeat("q", config.MaxNameLen) +
		"\nmcp_servers:\n  - name: " + strings.Repeat("m", 247) + "\n    command: x\n    group: " + strings.Repeat("g", 255) +
		"\ngroups:\n  - name: " + strings.Repeat("g", 255) + "\n    description: d\n"
	if _, err := config.Parse("w.yaml", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
}

// An invalid URL is named in its error without the secrets it carries
// (the error goes to stderr and the logs): its password or token, an
// MCP server URL's query values.
func TestRejectedURLHidesSecrets(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"nats:\n  urls: ['nats://alice:pw-s3cret@a:notaport']\n",
			`w.yaml:2: nats.urls[0]: invalid URL "nats://alice:***@a:notaport": invalid port ":notaport" after host`},
		{"nats:\n  urls: ['nats://alice:pw s3cret@a:4222']\n",
			`w.yaml:2: nats.urls[0]: invalid URL "nats://alice:***@a:4222": net/url: invalid userinfo`},
		{"nats:\n  urls: ['http://tok-s3cret@a:4222']\n",
			`w.yaml:2: nats.urls[0]: invalid URL "http://***@a:4222": scheme "http" is not one of nats, tls, ws, wss`},
		{"nats:\n  urls: ['alice:pw-s3cret@a:99999']\n",
			`w.yaml:2: nats.urls[0]: invalid URL "alice:***@a:99999": invalid port "99999"`},
		{"mcp_servers:\n  - name: a\n    url: 'ftp://bob:pw-s3cret@x/?api_key=key-s3cret'\n",
			`w.yaml:3: mcp_servers[0].url: invalid URL "ftp://bob:***@x/?api_key=***": scheme "ftp" is not one of http, https`},
		{"mcp_servers:\n  - name: a\n    url: 'https://x:notaport/?api_key=key-s3cret'\n",
			`w.yaml:3: mcp_servers[0].url: invalid URL "https://x:notaport/?api_key=***": invalid port ":notaport" after host`},
	} {
		_, err := config.Parse("w.yaml", []byte(tt.yaml))
		if err == nil {
			t.Errorf("%q accepted", tt.yaml)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%q:\nerr  %v\nwant %s", tt.yaml, err, tt.want)
		}
	}
}
