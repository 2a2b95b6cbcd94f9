package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// builtinKinds are the kinds the built-ins, the MCP client and the skill
// viewer declare when they register these tools.
var builtinKinds = map[string]string{
	ShellTool: toolkit.KindShell, PythonTool: toolkit.KindPython, ViewFileTool: toolkit.KindFileRead,
	WriteFileTool: toolkit.KindFileWrite, InsertFileTool: toolkit.KindFileWrite, SkillTool: toolkit.KindSkill,
}

// tool describes a tool as its builder registers it: the built-in names
// with their kinds, mcp__ names as MCP tools, the rest as function tools.
func tool(name string, readOnly bool) *toolkit.Tool {
	var opts []toolkit.Option
	if readOnly {
		opts = append(opts, toolkit.ReadOnly())
	}
	if k, ok := builtinKinds[name]; ok {
		opts = append(opts, toolkit.WithKind(k))
	} else if strings.HasPrefix(name, MCPPrefix) {
		opts = append(opts, toolkit.WithKind(toolkit.KindMCP))
	}
	if name == toolkit.MetaToolName {
		tk := toolkit.New(nil)
		_ = tk.AddGroup(toolkit.Group{Name: "g", Description: "G."})
		t, _ := tk.Get(toolkit.MetaToolName)
		return t
	}
	t, err := toolkit.Describe(&toolkit.Tool{Name: name}, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

var (
	fnTool    = tool("deploy", false)
	fnRO      = tool("lookup", true)
	mcpTool   = tool("mcp__fs__write_file", false)
	mcpRO     = tool("mcp__fs__read_file", true) // readOnlyHint
	metaTool  = tool(toolkit.MetaToolName, false)
	skillTool = tool(SkillTool, true)
	shell     = tool(ShellTool, false)
	python    = tool(PythonTool, false)
	viewFile  = tool(ViewFileTool, true)
	writeFile = tool(WriteFileTool, false)
	insert    = tool(InsertFileTool, false)
)

func cmd(c string) map[string]any  { return map[string]any{"command": c} }
func file(p string) map[string]any { return map[string]any{"file_path": p} }

func rule(t *testing.T, spec string, b Behavior) Rule {
	t.Helper()
	r, err := ParseRule(spec, b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type modeCase struct {
	name   string
	rules  []string // "allow WRITE:pattern"
	tool   *toolkit.Tool
	input  map[string]any
	want   Behavior
	reason string // substring of Decision.Reason, optional
	safety bool
	sugg   bool // suggestions expected
}

func runModeCases(t *testing.T, mode Mode, wd []string, cases []modeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(string(mode)+"/"+tc.name, func(t *testing.T) {
			p := Policy{Mode: mode, WorkingDirs: wd}
			for _, r := range tc.rules {
				b, spec, _ := strings.Cut(r, " ")
				p.Rules = append(p.Rules, rule(t, spec, Behavior(b)))
			}
			d := Decide(p, tc.tool, tc.input)
			if d.Behavior != tc.want {
				t.Fatalf("got %s (%s: %s), want %s", d.Behavior, d.Reason, d.Message, tc.want)
			}
			if tc.reason != "" && !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("reason %q, want it to contain %q", d.Reason, tc.reason)
			}
			if d.Safety != tc.safety {
				t.Fatalf("safety = %v, want %v (%s)", d.Safety, tc.safety, d.Message)
			}
			if tc.sugg && len(d.Suggested) == 0 {
				t.Fatalf("no suggestions: %+v", d)
			}
			if d.Message == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestModeDefault(t *testing.T) {
	runModeCases(t, ModeDefault, nil, []modeCase{
		{name: "write, no rules", tool: writeFile, input: file("/tmp/file.txt"), want: Ask, reason: "mode", sugg: true},
		{name: "deny rule", rules: []string{"deny write_text_file:*.env"}, tool: writeFile, input: file("/tmp/secret.env"), want: Deny, reason: "deny rule"},
		{name: "ask rule with suggestions", rules: []string{"ask write_text_file:*.py"}, tool: writeFile, input: file("/tmp/main.py"), want: Ask, reason: "ask rule", sugg: true},
		{name: "allow rule", rules: []string{"allow write_text_file:/tmp/**"}, tool: writeFile, input: file("/tmp/file.txt"), want: Allow, reason: "allow rule"},
		{name: "deny beats allow", rules: []string{"allow write_text_file", "deny write_text_file:*.env"}, tool: writeFile, input: file("/tmp/a.env"), want: Deny},
		{name: "ask beats allow", rules: []string{"allow write_text_file", "ask write_text_file:*.py"}, tool: writeFile, input: file("/tmp/a.py"), want: Ask, reason: "ask rule"},
		{name: "bash ls -a", tool: shell, input: cmd("ls -a"), want: Allow, reason: "read-only"},
		{name: "bash pwd", tool: shell, input: cmd("pwd"), want: Allow, reason: "read-only"},
		{name: "bash git status", tool: shell, input: cmd("git status"), want: Allow, reason: "read-only"},
		{name: "bash cat", tool: shell, input: cmd("cat README.md"), want: Allow, reason: "read-only"},
		{name: "bash npm install", tool: shell, input: cmd("npm install"), want: Ask, reason: "mode", sugg: true},
		{name: "dangerous path safety ask", tool: writeFile, input: file("/home/user/.bashrc"), want: Ask, reason: "safety", safety: true},
		{name: "safety ask not overridden by allow rule", rules: []string{"allow write_text_file:**"}, tool: writeFile, input: file("/home/user/.bashrc"), want: Ask, safety: true},
		{name: "bash rm -rf / safety", tool: shell, input: cmd("rm -rf /"), want: Ask, safety: true},
		{name: "bash injection safety", tool: shell, input: cmd("ls $(date +%s)"), want: Ask, safety: true},
		{name: "bash allow rule cannot override safety", rules: []string{"allow execute_shell_command:rm:*"}, tool: shell, input: cmd("rm -rf /"), want: Ask, safety: true},
		{name: "function tool asks", tool: fnTool, input: nil, want: Ask, sugg: true},
		{name: "function tool allowed by name rule", rules: []string{"allow deploy"}, tool: fnTool, want: Allow},
		{name: "function tool: patterns never match", rules: []string{"deny deploy:prod"}, tool: fnTool, input: map[string]any{"env": "prod"}, want: Ask},
		{name: "read-only function", tool: fnRO, want: Allow, reason: "read-only"},
		{name: "mcp tool asks", tool: mcpTool, want: Ask, sugg: true},
		{name: "mcp readOnlyHint still asks in default mode", tool: mcpRO, want: Ask, sugg: true},
		{name: "mcp readOnlyHint allowed by a rule", rules: []string{"allow mcp__fs__read_file"}, tool: mcpRO, want: Allow},
		{name: "reset_tools", tool: metaTool, want: Allow, reason: "tool check"},
		{name: "Skill", tool: skillTool, want: Allow},
		{name: "python asks", tool: python, input: map[string]any{"code": "print(1)"}, want: Ask},
		{name: "view file", tool: viewFile, input: file("/etc/passwd"), want: Allow, reason: "read-only"},
		{name: "insert file asks", tool: insert, input: file("/tmp/x"), want: Ask},
		{name: "path key", rules: []string{"deny write_text_file:/secret/**"}, tool: writeFile, input: map[string]any{"path": "/secret/a"}, want: Deny},
	})
}

func TestModeExplore(t *testing.T) {
	runModeCases(t, ModeExplore, nil, []modeCase{
		{name: "read tool", tool: viewFile, input: file("/tmp/file.txt"), want: Allow},
		{name: "write tool", tool: writeFile, input: file("/tmp/file.txt"), want: Deny, reason: "mode"},
		{name: "deny rule", rules: []string{"deny view_text_file:/secret/**"}, tool: viewFile, input: file("/secret/key.txt"), want: Deny, reason: "deny rule"},
		{name: "ask rule on read-only tool", rules: []string{"ask view_text_file:**/*.env"}, tool: viewFile, input: file("/tmp/secret.env"), want: Ask, reason: "ask rule"},
		{name: "allow rule cannot grant writes", rules: []string{"allow write_text_file:**"}, tool: writeFile, input: file("/tmp/file.txt"), want: Deny},
		{name: "dangerous path is deny, not safety ask", tool: writeFile, input: file("/home/user/.bashrc"), want: Deny},
		{name: "bash ls -a", tool: shell, input: cmd("ls -a"), want: Allow},
		{name: "bash pwd", tool: shell, input: cmd("pwd"), want: Allow},
		{name: "bash git status", tool: shell, input: cmd("git status"), want: Allow},
		{name: "bash cat", tool: shell, input: cmd("cat README.md"), want: Allow},
		{name: "bash cp", tool: shell, input: cmd("cp a b"), want: Deny},
		{name: "bash mv", tool: shell, input: cmd("mv a b"), want: Deny},
		{name: "bash touch", tool: shell, input: cmd("touch /tmp/x"), want: Deny},
		{name: "bash rm -rf /", tool: shell, input: cmd("rm -rf /"), want: Deny},
		{name: "reset_tools is not read-only", tool: metaTool, want: Deny},
		{name: "Skill", tool: skillTool, want: Allow},
		{name: "function", tool: fnTool, want: Deny},
		{name: "function allowed by rule still denied", rules: []string{"allow deploy"}, tool: fnTool, want: Deny},
		{name: "read-only function", tool: fnRO, want: Allow},
		{name: "mcp", tool: mcpTool, want: Deny},
		{name: "mcp readOnlyHint", tool: mcpRO, want: Allow},
		{name: "python", tool: python, want: Deny},
	})
}

func TestModeAcceptEdits(t *testing.T) {
	wd := []string{"/tmp/project"}
	runModeCases(t, ModeAcceptEdits, wd, []modeCase{
		{name: "write in working dir", tool: writeFile, input: file("/tmp/project/file.txt"), want: Allow, reason: "tool check"},
		{name: "insert in working dir", tool: insert, input: file("/tmp/project/file.txt"), want: Allow},
		{name: "read in working dir", tool: viewFile, input: file("/tmp/project/file.txt"), want: Allow},
		{name: "relative path resolves against the working dir", tool: writeFile, input: file("src/main.go"), want: Allow},
		{name: "dot-dot escapes", tool: writeFile, input: file("/tmp/project/../other/x"), want: Ask},
		{name: "outside working dir", tool: writeFile, input: file("/home/user/file.txt"), want: Ask, reason: "mode"},
		{name: "prefix is not containment", tool: writeFile, input: file("/tmp/project2/x"), want: Ask},
		{name: "read anywhere", tool: viewFile, input: file("/anywhere/file.txt"), want: Allow},
		{name: "deny rule beats working dir", rules: []string{"deny write_text_file:**/*.lock"}, tool: writeFile, input: file("/tmp/project/poetry.lock"), want: Deny},
		{name: "ask rule beats working dir", rules: []string{"ask insert_text_file:**/*.py"}, tool: insert, input: file("/tmp/project/main.py"), want: Ask},
		{name: "dangerous path", tool: writeFile, input: file("/home/user/.bashrc"), want: Ask, safety: true},
		{name: "dangerous path inside working dir", tool: writeFile, input: file("/tmp/project/.git/config"), want: Ask, safety: true},
		{name: "bash ls", tool: shell, input: cmd("ls -a"), want: Allow},
		{name: "touch inside", tool: shell, input: cmd("touch /tmp/project/new.txt"), want: Allow},
		{name: "mkdir inside", tool: shell, input: cmd("mkdir /tmp/project/newdir"), want: Allow},
		{name: "rm inside", tool: shell, input: cmd("rm /tmp/project/old.txt"), want: Allow},
		{name: "rmdir inside", tool: shell, input: cmd("rmdir /tmp/project/olddir"), want: Allow},
		{name: "cp inside", tool: shell, input: cmd("cp /tmp/project/a /tmp/project/b"), want: Allow},
		{name: "mv inside", tool: shell, input: cmd("mv /tmp/project/a /tmp/project/b"), want: Allow},
		{name: "sed -i inside", tool: shell, input: cmd("sed -i 's/x/y/g' /tmp/project/foo.txt"), want: Allow},
		{name: "relative targets inside", tool: shell, input: cmd("mkdir -p build && touch build/x"), want: Allow},
		{name: "rm outside", tool: shell, input: cmd("rm /Users/someone/other/foo"), want: Ask},
		{name: "touch outside", tool: shell, input: cmd("touch /Users/someone/other/foo"), want: Ask},
		{name: "mkdir outside", tool: shell, input: cmd("mkdir /Users/someone/other/newdir"), want: Ask},
		{name: "cp to outside", tool: shell, input: cmd("cp /tmp/project/a /Users/someone/other/b"), want: Ask},
		{name: "cp from outside", tool: shell, input: cmd("cp /Users/someone/other/a /tmp/project/b"), want: Ask},
		{name: "mv outside", tool: shell, input: cmd("mv /tmp/project/a /Users/someone/other/b"), want: Ask},
		{name: "sed -i outside", tool: shell, input: cmd("sed -i 's/x/y/g' /Users/someone/other/foo.txt"), want: Ask},
		{name: "sed without -i is not an edit", tool: shell, input: cmd("sed 's/x/y/g' /tmp/project/foo.txt"), want: Ask},
		{name: "bare mkdir", tool: shell, input: cmd("mkdir"), want: Ask},
		{name: "redirect outside", tool: shell, input: cmd("touch /tmp/project/a > /tmp/elsewhere"), want: Ask},
		{name: "function still asks", tool: fnTool, want: Ask},
	})
}

func TestModeBypass(t *testing.T) {
	runModeCases(t, ModeBypass, nil, []modeCase{
		{name: "no rules", tool: shell, input: cmd("npm install"), want: Allow, reason: "mode"},
		{name: "deny rule", rules: []string{"deny execute_shell_command:rm:*"}, tool: shell, input: cmd("rm -rf /tmp/foo"), want: Deny},
		{name: "ask rule", rules: []string{"ask execute_shell_command:git push:*"}, tool: shell, input: cmd("git push origin main"), want: Ask},
		{name: "dangerous path", tool: writeFile, input: file("/home/user/.bashrc"), want: Allow},
		{name: "dangerous removal", tool: shell, input: cmd("rm -rf /"), want: Allow},
		{name: "command injection", tool: shell, input: cmd("ls $(date +%s)"), want: Allow},
		{name: "dangerous config path in bash", tool: shell, input: cmd("rm ~/.bashrc"), want: Allow},
		{name: "tool allow", tool: shell, input: cmd("ls -a"), want: Allow},
		{name: "function", tool: fnTool, want: Allow},
		{name: "mcp", tool: mcpTool, want: Allow},
		{name: "python", tool: python, want: Allow},
		{name: "reset_tools", tool: metaTool, want: Allow},
	})
}

func TestModeDontAsk(t *testing.T) {
	runModeCases(t, ModeDontAsk, nil, []modeCase{
		{name: "no rules", tool: shell, input: cmd("npm install"), want: Deny, reason: "mode", sugg: true},
		{name: "deny rule", rules: []string{"deny execute_shell_command:rm:*"}, tool: shell, input: cmd("rm -rf /tmp/foo"), want: Deny, reason: "deny rule"},
		{name: "allow rule", rules: []string{"allow write_text_file:/tmp/**"}, tool: writeFile, input: file("/tmp/file.txt"), want: Allow},
		{name: "read-only bash", tool: shell, input: cmd("ls -a"), want: Allow},
		{name: "ask rule becomes deny with suggestions", rules: []string{"ask write_text_file:**/*.py"}, tool: writeFile, input: file("/tmp/main.py"), want: Deny, reason: "ask rule (dont_ask)", sugg: true},
		{name: "safety ask becomes deny", tool: writeFile, input: file("/home/user/.bashrc"), want: Deny, reason: "safety check (dont_ask)", safety: true},
		{name: "rm -rf /", tool: shell, input: cmd("rm -rf /"), want: Deny, safety: true},
		{name: "function", tool: fnTool, want: Deny},
		{name: "function with allow rule", rules: []string{"allow deploy"}, tool: fnTool, want: Allow},
		{name: "mcp readOnlyHint", tool: mcpRO, want: Allow},
		{name: "mcp", tool: mcpTool, want: Deny},
		{name: "reset_tools", tool: metaTool, want: Allow},
	})
}

// TestReadOnlyAllowedInEveryMode: the read-only fast path, in every mode,
// except for MCP tools in DEFAULT mode (TestReadOnlyMCPToolAsksInDefaultMode).
func TestReadOnlyAllowedInEveryMode(t *testing.T) {
	for _, m := range Modes {
		for _, tc := range []struct {
			tool  *toolkit.Tool
			input map[string]any
		}{{fnRO, nil}, {mcpRO, nil}, {skillTool, nil}, {viewFile, file("/x")}, {shell, cmd("ls -a")}, {shell, cmd("git log --oneline | head -5")}} {
			if m == ModeDefault && tc.tool == mcpRO {
				continue
			}
			if d := Decide(Policy{Mode: m}, tc.tool, tc.input); d.Behavior != Allow {
				t.Errorf("%s %s %v: %s (%s)", m, tc.tool.Name, tc.input, d.Behavior, d.Message)
			}
		}
	}
}

// TestReadOnlyMCPToolAsksInDefaultMode: a server's readOnlyHint does not
// let its tool run unasked in DEFAULT mode; an allow rule does. Other
// modes keep the read-only fast path.
func TestReadOnlyMCPToolAsksInDefaultMode(t *testing.T) {
	if d := Decide(Policy{Mode: ModeDefault}, mcpRO, nil); d.Behavior != Ask || len(d.Suggested) == 0 {
		t.Errorf("default: %s (%s), suggestions %v", d.Behavior, d.Message, d.Suggested)
	}
	allow, err := ParseRule("mcp__fs__read_file", Allow)
	if err != nil {
		t.Fatal(err)
	}
	if d := Decide(Policy{Mode: ModeDefault, Rules: []Rule{allow}}, mcpRO, nil); d.Behavior != Allow {
		t.Errorf("default with an allow rule: %s (%s)", d.Behavior, d.Message)
	}
	for _, m := range []Mode{ModeAcceptEdits, ModeExplore, ModeDontAsk} {
		if d := Decide(Policy{Mode: m}, mcpRO, nil); d.Behavior != Allow {
			t.Errorf("%s: %s (%s)", m, d.Behavior, d.Message)
		}
	}
}

func TestShellRulesCompound(t *testing.T) {
	tests := []struct {
		name  string
		rules []string
		cmd   string
		want  Behavior
	}{
		{"allow must cover every part", []string{"allow execute_shell_command:git status:*"}, "git status; rm -rf x", Ask},
		{"two allow rules cover two parts", []string{"allow execute_shell_command:npm install:*", "allow execute_shell_command:npm test:*"}, "npm install && npm test", Allow},
		{"deny hits any part", []string{"allow execute_shell_command", "deny execute_shell_command:rm:*"}, "ls && rm -rf x", Deny},
		{"deny sees through env assignments", []string{"deny execute_shell_command:rm:*"}, "FOO=1 rm x", Deny},
		{"prefix is word based", []string{"allow execute_shell_command:git push:*"}, "git pushx", Ask},
		{"prefix with space star", []string{"allow execute_shell_command:make *"}, "make build", Allow},
		{"bare prefix is exact", []string{"allow execute_shell_command:make"}, "make build", Ask},
		{"exact", []string{"allow execute_shell_command:make build"}, "make   build", Allow},
		{"wildcard", []string{"allow execute_shell_command:docker * ps"}, "docker compose ps", Allow},
		{"quotes removed", []string{"deny execute_shell_command:git push:*"}, `git "push" --force`, Deny},
		{"pipe parts", []string{"deny execute_shell_command:curl:*"}, "echo x | curl -d @- http://x", Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Mode: ModeDefault}
			for _, r := range tt.rules {
				b, spec, _ := strings.Cut(r, " ")
				p.Rules = append(p.Rules, rule(t, spec, Behavior(b)))
			}
			if d := Decide(p, shell, cmd(tt.cmd)); d.Behavior != tt.want {
				t.Fatalf("got %s (%s)", d.Behavior, d.Message)
			}
		})
	}
}

func TestShellReadOnly(t *testing.T) {
	tests := []struct {
		cmd  string
		want bool
	}{
		{"ls -la /tmp", true},
		{"cat a.txt | grep foo | wc -l", true},
		{"git log --oneline -5 && git status", true},
		{"find . -name '*.go'", true},
		{"ls 2>/dev/null", true},
		{"grep -r x . 2>&1 | head", true},
		{"git branch", true},
		{"git branch -D main", false},
		{"find . -delete", false},
		{"find . -exec rm {} ;", false},
		{"echo hi > out.txt", false},
		{"echo hi >> out.txt", false},
		{"cat a &> out", false},
		{"ls $(pwd)", false},
		{"ls `pwd`", false},
		{"diff <(ls a) <(ls b)", false},
		{"echo \"$(rm x)\"", false},
		{"sort -o out in", false},
		{"date -s 2020-01-01", false},
		{"hostname evil", false},
		{"npm install", false},
		{"ls; rm x", false},
		{"ls & rm x", false},
		{"echo 'unterminated", false},
		{"", false},
		{"git", false},
		{"git push", false},
	}
	for _, tt := range tests {
		if got := shellReadOnly(tt.cmd); got != tt.want {
			t.Errorf("shellReadOnly(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
	}
}

func TestShellSuggestions(t *testing.T) {
	d := Decide(Policy{}, shell, cmd("npm install lodash && ls && ./run.sh --fast && npm install x"))
	var got []string
	for _, r := range d.Suggested {
		if r.Behavior != Allow || r.Source != "suggested" || r.Tool != ShellTool {
			t.Fatalf("bad suggestion %+v", r)
		}
		got = append(got, r.Pattern)
	}
	if strings.Join(got, ",") != "npm install:*,./run.sh:*" {
		t.Fatalf("suggestions %v", got)
	}
	// A suggestion, stored as a rule, allows the call.
	p := Policy{Rules: d.Suggested}
	if d := Decide(p, shell, cmd("npm install lodash && ls && ./run.sh --fast && npm install x")); d.Behavior != Allow {
		t.Fatalf("suggested rules do not allow the call: %s", d.Message)
	}
	fd := Decide(Policy{}, writeFile, file("/srv/app/conf.yaml"))
	if len(fd.Suggested) != 1 || fd.Suggested[0].Pattern != "/srv/app/**" {
		t.Fatalf("file suggestion %+v", fd.Suggested)
	}
	if d := Decide(Policy{Rules: fd.Suggested}, writeFile, file("/srv/app/sub/other.yaml")); d.Behavior != Allow {
		t.Fatalf("suggested file rule does not allow: %s", d.Message)
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"*.env", "/tmp/secret.env", true},
		{"*.env", "/tmp/secret.env.bak", false},
		{"/tmp/**", "/tmp/a/b/c", true},
		{"/tmp/**", "/tmpx/a", false},
		{"/tmp/*", "/tmp/a", true},
		{"/tmp/*", "/tmp/a/b", false},
		{"**/*.py", "/tmp/project/main.py", true},
		{"**/*.py", "main.py", true},
		{"/src/**/test_*.go", "/src/a/b/test_x.go", true},
		{"/src/**/test_*.go", "/src/test_x.go", true},
		{"/secret/", "/secret/key", true},
		{"/a?c", "/abc", true},
		{"/a?c", "/a/c", false},
		{"/ünï/*.txt", "/ünï/x.txt", true},
		{"/a.b/*", "/axb/c", false},
		// Bracket sets, as fnmatch reads them (a deny rule "*.[ch]" from
		// AgentScope matched nothing): [seq], [!seq], ranges, "]" first
		// taken as itself, an unclosed "[" as itself; a negated set does
		// not match "/".
		{"*.[ch]", "/src/main.c", true},
		{"*.[ch]", "/src/main.h", true},
		{"*.[ch]", "/src/main.o", false},
		{"/src/*.[!o]", "/src/main.c", true},
		{"/src/*.[!o]", "/src/main.o", false},
		{"/a[!x]b", "/a/b", false},
		{"/log[0-9]", "/log7", true},
		{"/log[0-9]", "/logx", false},
		{"/x[]]", "/x]", true},
		{"/x[!]]", "/xa", true},
		{"/x[!]]", "/x]", false},
		{"/x[", "/x[", true},
		{"/x[ab", "/x[ab", true},
		{"/x[^]", "/x^", true},
		{"/x[\\]", "/x\\", true},
	}
	for _, tt := range tests {
		if got := matchGlob(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestDangerousPath(t *testing.T) {
	for _, p := range []string{"/home/u/.bashrc", "/root/.zshrc", "/x/.git/hooks/pre-commit", "/home/u/.ssh/authorized_keys", "/etc/passwd", "/usr/bin/ls", "//server/share", "/", "/repo/.gitconfig"} {
		if dangerousPath(p) == "" {
			t.Errorf("%s not dangerous", p)
		}
	}
	for _, p := range []string{"/tmp/x", "/home/u/project/main.go", "/dev/null", "/srv/gitlab/x", "/home/u/.github/workflows/ci.yml"} {
		if why := dangerousPath(p); why != "" {
			t.Errorf("%s dangerous: %s", p, why)
		}
	}
}

// Working directories compare by real path: a file reached through a
// symbolic link is inside the directory the link points to, and the other
// way round.
func TestAcceptEditsSymlinkedWorkingDir(t *testing.T) {
	parent := t.TempDir()
	real := filepath.Join(parent, "real")
	link := filepath.Join(parent, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	tests := []struct {
		wd, file string
		tool     *toolkit.Tool
	}{
		{real, filepath.Join(link, "file.txt"), writeFile},
		{link, filepath.Join(real, "file.txt"), insert},
		{link, filepath.Join(real, "new", "deep", "file.txt"), writeFile},
	}
	for _, tt := range tests {
		if d := Decide(Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{tt.wd}}, tt.tool, file(tt.file)); d.Behavior != Allow {
			t.Errorf("wd %s, file %s: %s (%s)", tt.wd, tt.file, d.Behavior, d.Message)
		}
	}
	// A link inside the working dir that points outside is outside.
	outside := t.TempDir()
	escape := filepath.Join(real, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	if d := Decide(Policy{Mode: ModeAcceptEdits, WorkingDirs: []string{real}}, writeFile, file(filepath.Join(escape, "x"))); d.Behavior == Allow {
		t.Errorf("write through an escaping link allowed")
	}
}

func TestNeverRuns(t *testing.T) {
	tests := []struct {
		name  string
		p     Policy
		tool  *toolkit.Tool
		never bool
	}{
		{"name-level deny", Policy{Rules: []Rule{{Tool: "deploy", Behavior: Deny}}}, fnTool, true},
		{"pattern deny is not never", Policy{Rules: []Rule{{Tool: ShellTool, Pattern: "rm:*", Behavior: Deny}}}, shell, false},
		{"default mode", Policy{}, fnTool, false},
		{"explore, non-read-only function", Policy{Mode: ModeExplore}, fnTool, true},
		{"explore, read-only function", Policy{Mode: ModeExplore}, fnRO, false},
		{"explore, mcp", Policy{Mode: ModeExplore}, mcpTool, true},
		{"explore, mcp read-only", Policy{Mode: ModeExplore}, mcpRO, false},
		{"explore, reset_tools", Policy{Mode: ModeExplore}, metaTool, true},
		{"explore, shell may be read-only", Policy{Mode: ModeExplore}, shell, false},
		{"explore, write", Policy{Mode: ModeExplore}, writeFile, true},
		{"explore, view", Policy{Mode: ModeExplore}, viewFile, false},
		{"explore, python", Policy{Mode: ModeExplore}, python, true},
		{"explore, ask rule makes it approvable", Policy{Mode: ModeExplore, Rules: []Rule{{Tool: "deploy", Behavior: Ask}}}, fnTool, false},
	}
	for _, tt := range tests {
		if got := NeverRuns(tt.p, tt.tool); got != tt.never {
			t.Errorf("%s: NeverRuns = %v, want %v", tt.name, got, tt.never)
		}
	}
}

func TestParseBadInput(t *testing.T) {
	for _, s := range []string{"", ":x", "bad name", "tool:", "tool:  ", "a.b", "x*"} {
		if _, err := ParseRule(s, Allow); err == nil {
			t.Errorf("ParseRule(%q) accepted", s)
		}
	}
	if _, err := ParseRule("tool", "maybe"); err == nil {
		t.Error("bad behavior accepted")
	}
	r, err := ParseRule(" execute_shell_command:git push:* ", Deny)
	if err != nil || r.Tool != ShellTool || r.Pattern != "git push:*" || r.String() != "execute_shell_command:git push:*" {
		t.Fatalf("ParseRule: %+v %v", r, err)
	}
	for _, s := range []string{"nope", "accept", "by pass"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted", s)
		}
	}
	for in, want := range map[string]Mode{"": ModeDefault, "ACCEPT_EDITS": ModeAcceptEdits, "accept-edits": ModeAcceptEdits, " Explore ": ModeExplore, "dont_ask": ModeDontAsk} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, m, err)
		}
	}
	for _, r := range []Rule{{Tool: "", Behavior: Allow}, {Tool: "x", Behavior: "no"}, {Tool: "x", Pattern: " y", Behavior: Allow}} {
		if r.Validate() == nil {
			t.Errorf("Validate(%+v) accepted", r)
		}
	}
}

func TestParseShell(t *testing.T) {
	tests := []struct {
		line    string
		cmds    []string
		outputs []string
		subst   bool
		err     bool
	}{
		{line: `echo "a;b" 'c|d' && ls`, cmds: []string{"echo a;b c|d", "ls"}},
		{line: "a | b || c ; d & e\nf", cmds: []string{"a", "b", "c", "d", "e", "f"}},
		{line: `FOO=1 BAR="x y" make build`, cmds: []string{"make build"}},
		{line: `echo x > out.txt 2>&1`, cmds: []string{"echo x"}, outputs: []string{"out.txt"}},
		{line: `cmd 2> err.log >> all.log`, cmds: []string{"cmd"}, outputs: []string{"err.log", "all.log"}},
		// bash's reading (one command), then dash's ("cmd &" and "> both.log").
		{line: `cmd &> both.log`, cmds: []string{"cmd", "cmd", ""}, outputs: []string{"both.log", "both.log"}},
		{line: `sort < in.txt`, cmds: []string{"sort"}},
		{line: `echo a\ b \\`, cmds: []string{`echo a b \`}},
		{line: "echo a \\\n b", cmds: []string{"echo a b"}},
		{line: `echo "x $(id)"`, cmds: []string{"echo x $(id)", "id"}, subst: true},
		{line: "echo `id`", cmds: []string{"echo `id`", "id"}, subst: true},
		{line: `echo "$(printf '"')" ; rm x`, cmds: []string{`echo $(printf '"')`, "rm x", `printf "`}, subst: true},
		{line: `echo "unterminated`, err: true},
		{line: `echo 'unterminated`, err: true},
	}
	for _, tt := range tests {
		line, err := parseShell(tt.line)
		if (err != nil) != tt.err {
			t.Errorf("%q: err = %v", tt.line, err)
			continue
		}
		if tt.err {
			continue
		}
		var cmds, outs []string
		for _, c := range line.cmds {
			cmds = append(cmds, c.text())
			outs = append(outs, c.outputs...)
		}
		if strings.Join(cmds, "\x00") != strings.Join(tt.cmds, "\x00") || strings.Join(outs, ",") != strings.Join(tt.outputs, ",") || line.subst != tt.subst {
			t.Errorf("%q: cmds %q outputs %q subst %v", tt.line, cmds, outs, line.subst)
		}
	}
}

// TestKindComesFromTheTool: a tool of one's own named like a built-in is a
// function tool like any other: not auto-allowed, hidden in explore mode.
func TestKindComesFromTheTool(t *testing.T) {
	for _, name := range []string{ViewFileTool, SkillTool, ShellTool} {
		impostor, err := toolkit.Describe(&toolkit.Tool{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		for mode, want := range map[Mode]Behavior{ModeDefault: Ask, ModeExplore: Deny} {
			d := Decide(Policy{Mode: mode}, impostor, map[string]any{"file_path": "/etc/passwd", "command": "ls"})
			if d.Behavior != want {
				t.Errorf("%s (no kind) in %s: %s (%s), want %s", name, mode, d.Behavior, d.Message, want)
			}
		}
	}
}

// TestFileSuggestionEscapesGlobs: the rule suggested for a file in a
// directory whose name holds "*", "?" or "[" names that directory only:
// "/srv/a*b/**" allowed /srv/aXb too.
func TestFileSuggestionEscapesGlobs(t *testing.T) {
	for _, dir := range []string{"/srv/a*b", "/srv/a?b", "/srv/a[x]b", "/srv/[!a]"} {
		fd := Decide(Policy{}, writeFile, file(dir+"/conf.yaml"))
		if len(fd.Suggested) != 1 {
			t.Fatalf("%s: suggestions %+v", dir, fd.Suggested)
		}
		p := Policy{Rules: fd.Suggested}
		if d := Decide(p, writeFile, file(dir+"/sub/other.yaml")); d.Behavior != Allow {
			t.Errorf("%s: the suggested rule %q does not allow the directory it names: %s", dir, fd.Suggested[0].Pattern, d.Message)
		}
		for _, other := range []string{"/srv/aXb/x", "/srv/ab/x", "/srv/b/x", "/srv/x/x"} {
			if d := Decide(p, writeFile, file(other)); d.Behavior == Allow {
				t.Errorf("%s: the suggested rule %q allows %s", dir, fd.Suggested[0].Pattern, other)
			}
		}
	}
}
