package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

func TestExample(t *testing.T) {
	cfg, err := config.Load("testdata/example.yaml")
	if err != nil {
		t.Fatalf("the example does not load:\n%v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"instance", cfg.Instance, "worker-1"},
		{"instance name", cfg.InstanceName(), "worker-1"},
		{"queue group", cfg.QueueGroup, "toolbus"},
		{"grace period", cfg.GracePeriod, 20 * time.Second},
		{"log", cfg.LogFormat + "/" + cfg.LogLevel, "json/info"},
		{"urls", cfg.NATS.URLs, []string{"nats://10.0.0.1:4222", "nats://10.0.0.2:4222", "10.0.0.3:4222"}},
		{"user", cfg.NATS.User + ":" + cfg.NATS.Password, "worker:s3cret"},
		{"tls ca made absolute", cfg.NATS.TLS.CA, filepath.Join(dir, "certs", "ca.pem")},
		{"store dir made absolute", cfg.Embedded.StoreDir, filepath.Join(dir, "data", "jetstream")},
		{"listen", cfg.Embedded.Listen, "127.0.0.1:4222"},
		{"groups", len(cfg.Groups), 3},
		{"exec instructions", cfg.Groups[1].Instructions, "Prefer short commands. Everything you start is killed when the call\nends, so do not leave servers running in the background.\n"},
		{"files active", cfg.Groups[0].Active, true},
		{"workspace made absolute", cfg.Builtins.Workspace, filepath.Join(dir, "workspace")},
		{"tools", len(cfg.Builtins.Tools), 7},
		{"view group", cfg.Builtins.Tools[2], config.BuiltinTool{Name: "view_text_file", Group: "files"}},
		{"builtin default timeout", cfg.Builtins.DefaultTimeout, 2 * time.Minute},
		{"max output", cfg.Builtins.MaxOutputBytes, 262144},
		{"max session workspaces", cfg.Builtins.MaxSessionWorkspaces, 5000},
		{"max session workspaces passed on", cfg.BuiltinConfig().MaxSessionWorkspaces, 5000},
		{"mcp stdio", string(cfg.MCPServers[0].Transport) + " " + cfg.MCPServers[0].Command + " " + strings.Join(cfg.MCPServers[0].Args, " "), "stdio npx -y @modelcontextprotocol/server-everything"},
		{"mcp env", cfg.MCPServers[0].Env, map[string]string{"LOG_LEVEL": "warn"}},
		{"mcp cwd made absolute", cfg.MCPServers[0].Cwd, dir},
		{"mcp transport inferred", cfg.MCPServers[1].Transport, mcp.TransportStreamableHTTP},
		{"mcp mode", cfg.MCPServers[1].Mode, mcp.ModeStateless},
		{"mcp default mode", cfg.MCPServers[0].Mode, mcp.ModeStateful},
		{"mcp headers", cfg.MCPServers[1].Headers["Authorization"], "Bearer abc123"},
		{"mcp timeout", cfg.MCPServers[0].Timeout, mcp.Duration(time.Minute)},
		{"mcp connect timeout", cfg.MCPServers[0].ConnectTimeout, mcp.Duration(30 * time.Second)},
		{"mcp protocol version", cfg.MCPServers[0].ProtocolVersion, "2025-11-25"},
		{"mcp serve resources", cfg.MCPServers[0].ServeResources, true},
		{"mcp log level", cfg.MCPServers[0].LogLevel, "info"},
		{"skills", cfg.Skills[0], config.Skills{Dir: filepath.Join(dir, "skills"), ScanSubdirs: true, Group: "research"}},
		{"per-tool timeout", cfg.Middleware.Timeouts["execute_shell_command"], 30 * time.Minute},
		{"rate limit", cfg.Middleware.RateLimits[0], config.RateLimit{Key: "session", Rate: 10, Burst: 20, MaxKeys: 100000}},
		{"rate limit default burst", cfg.Middleware.RateLimits[1].Burst, 2},
		{"rate limit default max keys", cfg.Middleware.RateLimits[1].MaxKeys, 0},
		{"max in flight", cfg.Middleware.MaxInFlight, 128},
		{"max result bytes", cfg.Middleware.MaxResultBytes, 64 << 20},
		{"permission mode", cfg.Permissions.Mode, "default"},
		{"permission allow", cfg.Permissions.Allow, []string{"execute_shell_command:git status:*"}},
		{"permission working dirs made absolute", cfg.WorkingDirs(), []string{filepath.Join(dir, "workspace")}},
		{"approval ttl", cfg.Permissions.ApprovalTTL, 24 * time.Hour},
		{"state bound", cfg.State.MaxSessions, int64(4_000_000)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

// The example's groups and built-ins go into a toolkit as they are.
func TestExampleRegisters(t *testing.T) {
	cfg, err := config.Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Builtins.Workspace = t.TempDir()
	tk := toolkit.New(nil)
	for _, g := range cfg.ToolkitGroups() {
		if err := tk.AddGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := builtin.Register(tk, cfg.BuiltinConfig()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range tk.Tools() {
		got = append(got, tl.Name+"@"+tl.Group())
	}
	want := []string{"echo@basic", "sleep@basic", "view_text_file@files", "write_text_file@files", "insert_text_file@files",
		"execute_shell_command@exec", "execute_python_code@exec"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if g := tk.Groups()[1]; g.Name != "exec" || g.Description != "Run shell commands and Python code in the workspace." {
		t.Errorf("the declared exec group was not used: %+v", g)
	}
}

func TestDefault(t *testing.T) {
	def := config.Default()
	if err := def.Validate(); err != nil {
		t.Fatalf("the default config is invalid: %v", err)
	}
	for _, empty := range []string{"", "\n# only a comment\n", "---\n", "~\n"} {
		cfg, err := config.Parse("empty.yaml", []byte(empty))
		if err != nil {
			t.Fatalf("%q: %v", empty, err)
		}
		if cfg.String() != def.String() {
			t.Errorf("%q parses to\n%s\nwant the default\n%s", empty, cfg, def)
		}
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"queue group", def.QueueGroup, "toolbus"},
		{"grace", def.GracePeriod, 30 * time.Second},
		{"log", def.LogFormat + "/" + def.LogLevel, "text/info"},
		{"listen", def.Embedded.Listen, "127.0.0.1:4222"},
		{"store", def.Embedded.StoreDir, filepath.Join(config.DataDir(), "jetstream")},
		{"workspace", def.Builtins.Workspace, filepath.Join(config.DataDir(), "workspace")},
		{"builtin tools: the defaults", def.BuiltinConfig().Tools, []builtin.Tool(nil)},
		{"no urls", len(def.NATS.URLs), 0},
		{"state bound", def.State.MaxSessions, int64(config.DefaultMaxStoredSessions)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if name := def.InstanceName(); !strings.HasSuffix(name, "-"+strconv.Itoa(os.Getpid())) || !toolkit.ValidName(name) {
		t.Errorf("instance name %q does not end with the pid, or is not a valid token", name)
	}
}

func TestDataDir(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/srv/data")
	if got := config.DataDir(); got != "/srv/data/toolbus" {
		t.Errorf("DataDir = %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	t.Setenv("HOME", "/home/op")
	if got := config.DataDir(); got != "/home/op/.local/share/toolbus" {
		t.Errorf("DataDir = %q", got)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := config.Load(path)
	want := path + ": cannot read the config file: no such file"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	var ce *config.Error
	if !errors.As(err, &ce) || ce.File != path {
		t.Errorf("errors.As: %#v", ce)
	}
	_, err = config.Load(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "cannot read the config file") {
		t.Errorf("a directory: err = %v", err)
	}
}

// A relative path is taken from the config file's directory, wherever the
// worker runs.
func TestLoadRelativePaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "user.creds"), []byte("creds"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(path, []byte("nats:\n  urls: [nats://h:4222]\n  credentials: user.creds\nbuiltins:\n  workspace: /abs/ws\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NATS.Credentials != filepath.Join(dir, "user.creds") || cfg.Builtins.Workspace != "/abs/ws" {
		t.Errorf("credentials %q, workspace %q", cfg.NATS.Credentials, cfg.Builtins.Workspace)
	}
}

func TestString(t *testing.T) {
	cfg, err := config.Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.String()
	for _, secret := range []string{"s3cret", "abc123", "warn", "oauth-pw"} {
		if strings.Contains(s, secret) {
			t.Errorf("String shows %q:\n%s", secret, s)
		}
	}
	for _, shown := range []string{"grace_period: 20s", "queue_group: toolbus", "Authorization: '***'"} {
		if !strings.Contains(s, shown) {
			t.Errorf("String lacks %q:\n%s", shown, s)
		}
	}
	if cfg.NATS.Password != "s3cret" || cfg.MCPServers[1].Headers["Authorization"] != "Bearer abc123" || cfg.MCPServers[2].OAuth.ClientSecret != "oauth-pw" {
		t.Error("String changed the config")
	}
}

// "tools: []" turns every built-in off; an absent or empty "tools" means
// the defaults.
func TestBuiltinToolsOff(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want int
	}{
		{"builtins:\n  tools: []\n", 0},
		{"builtins:\n  tools:\n", len(builtin.DefaultTools)},
		{"builtins:\n  workspace: ws\n", len(builtin.DefaultTools)},
	} {
		cfg, err := config.Parse("w.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		bc := cfg.BuiltinConfig()
		bc.Workspace = t.TempDir()
		tk := toolkit.New(nil)
		if err := builtin.Register(tk, bc); err != nil {
			t.Fatal(err)
		}
		if got := len(tk.Tools()); got != tt.want {
			t.Errorf("%q: %d tools, want %d", tt.yaml, got, tt.want)
		}
	}
}

// TestMCPServerIsMCPConfig: an entry of mcp_servers is an
// mcp.ServerConfig, so every field the MCP client has is settable in the
// worker's YAML, and the one validator of package mcp checks it.
func TestMCPServerIsMCPConfig(t *testing.T) {
	cfg, err := config.Parse("w.yaml", []byte(`
mcp_servers:
  - name: legacy
    command: ./server
    connect_timeout: 5s
    protocol_version: "2025-11-25"
`))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.MCPServers[0]
	if s.ConnectTimeout != mcp.Duration(5*time.Second) || s.ProtocolVersion != "2025-11-25" || s.Transport != mcp.TransportStdio {
		t.Fatalf("server = %+v", s)
	}
	_, err = config.Parse("w.yaml", []byte("mcp_servers:\n  - name: legacy\n    command: ./server\n    protocol_version: latest\n"))
	if err == nil || !strings.Contains(err.Error(), `w.yaml:4: mcp_servers[0].protocol_version: "latest" is not an MCP protocol version`) {
		t.Fatalf("err = %v", err)
	}
}

// TestGraceZero: grace_period 0 in the file interrupts at once (as --grace
// 0 does); only a file without it gets the default.
func TestGraceZero(t *testing.T) {
	for yaml, want := range map[string]time.Duration{"grace_period: 0s\n": 0, "grace_period:\n": config.DefaultGracePeriod, "grace_period: ~\n": config.DefaultGracePeriod, "instance: w1\n": config.DefaultGracePeriod, "": config.DefaultGracePeriod} {
		cfg, err := config.Parse("w.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.GracePeriod != want {
			t.Errorf("%q: grace %v, want %v", yaml, cfg.GracePeriod, want)
		}
	}
}

// A config file that is not a regular file of reasonable size is refused
// at once: a FIFO with no writer does not hang the worker, and /dev/zero
// does not fill its memory.
func TestLoadOddFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := ostest.Mkfifo(t, fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", config.MaxFileBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A socket cannot be opened at all: its open fails "no such device
	// or address", which says nothing of the file.
	sock := filepath.Join(dir, "sock.yaml")
	l, err := ostest.ListenUnix(t, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct{ path, want string }{
		{fifo, fifo + ": cannot read the config file: a named pipe (FIFO), not a regular file: give the path of a regular file"},
		{sock, sock + ": cannot read the config file: a socket, not a regular file: give the path of a regular file"},
		{"/dev/zero", "/dev/zero: cannot read the config file: a character device, not a regular file: give the path of a regular file"},
		{big, big + fmt.Sprintf(": cannot read the config file: %d bytes, over the limit of %d", config.MaxFileBytes+3, config.MaxFileBytes)},
	} {
		done := make(chan error, 1)
		go func() { _, err := config.Load(tc.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || err.Error() != tc.want {
				t.Errorf("%s: err = %v\nwant %s", tc.path, err, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Load has not returned 30 s later: it reads what is no regular file", tc.path)
		}
	}
}

// The files the config names (credentials, TLS, the embedded server's
// config) must be regular files of reasonable size: /dev/zero as an nkey
// seed passed --check-config and then filled the worker's memory.
func TestNamedFilesRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "seed.nk")
	if err := ostest.Mkfifo(t, fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(big, make([]byte, config.MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := "nats:\n  urls: [nats://x:4222]\n  nkey_seed: " + fifo + "\n  tls:\n    ca: " + big + "\n    cert: /dev/zero\n    key: /dev/zero\n"
	_, err := config.Parse("w.yaml", []byte(yaml))
	want := strings.Join([]string{
		"w.yaml:3: nats.nkey_seed: " + fifo + " is a named pipe (FIFO), not a regular file",
		"w.yaml:5: nats.tls.ca: " + big + fmt.Sprintf(" is %d bytes, over the limit of %d", config.MaxFileBytes+1, config.MaxFileBytes),
		"w.yaml:6: nats.tls.cert: /dev/zero is a character device, not a regular file",
		"w.yaml:7: nats.tls.key: /dev/zero is a character device, not a regular file",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
}

// A path written "~/…" is below the home directory, as a shell reads it
// (and the skill loader read it when given one): it was taken for a
// directory named "~" beside the config file.
func TestLoadHomePaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	path := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(path, []byte("builtins:\n  workspace: ~/ws\nskills:\n  - dir: ~/skills\n  - dir: \"~\"\n  - dir: ~x/skills\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "ws"); cfg.Builtins.Workspace != want {
		t.Errorf("workspace %q, want %q", cfg.Builtins.Workspace, want)
	}
	// "~user" is not expanded (no user lookup): relative to the file.
	for i, want := range []string{filepath.Join(home, "skills"), home, filepath.Join(dir, "~x/skills")} {
		if got := cfg.Skills[i].Dir; got != want {
			t.Errorf("skills[%d] %q, want %q", i, got, want)
		}
	}
}

// String hides the secrets a URL carries: a NATS URL's password or
// token (nats://user:password@host, nats://token@host), an MCP server
// URL's password and query values (hosted servers take API keys there).
func TestStringHidesURLSecrets(t *testing.T) {
	yaml := "nats:\n  urls: ['nats://alice:natspw-s3cret@a:4222', 'nats://tok-s3cret@b:4222']\n" +
		"mcp_servers:\n  - name: m\n    url: 'https://bob:mcppw-s3cret@mcp.example/mcp?api_key=key-s3cret&v=2'\n"
	cfg, err := config.Parse("w.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.String()
	if strings.Contains(s, "s3cret") {
		t.Errorf("String shows a URL's secret:\n%s", s)
	}
	for _, shown := range []string{"alice:***@a:4222", "***@b:4222", "bob:***@mcp.example/mcp?api_key=***&v=***"} {
		if !strings.Contains(s, shown) {
			t.Errorf("String lacks %q:\n%s", shown, s)
		}
	}
	if cfg.NATS.URLs[0] != "nats://alice:natspw-s3cret@a:4222" || !strings.Contains(cfg.MCPServers[0].URL, "key-s3cret") {
		t.Error("String changed the config")
	}
}
