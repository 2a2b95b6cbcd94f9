package builtin

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// Names of the built-in tools.
const (
	Echo                = "echo"
	Sleep               = "sleep"
	ExecuteShellCommand = "execute_shell_command"
	ExecutePythonCode   = "execute_python_code"
	ViewTextFile        = "view_text_file"
	WriteTextFile       = "write_text_file"
	InsertTextFile      = "insert_text_file"
)

// Names lists every built-in tool, in registration order.
var Names = []string{Echo, Sleep, ViewTextFile, WriteTextFile, InsertTextFile, ExecuteShellCommand, ExecutePythonCode}

// DefaultTools are the tools registered when Config.Tools is nil: the demo
// tools and the file tools. Shell and Python are off unless listed.
var DefaultTools = []string{Echo, Sleep, ViewTextFile, WriteTextFile, InsertTextFile}

// ExecGroup is the default group of the shell and Python tools. It is
// inactive by default: a session must turn it on with reset_tools.
const ExecGroup = "exec"

// ExecGroupDefinition is the group Register adds when a tool goes into
// ExecGroup and the toolkit has no group of that name yet. Declare the
// group yourself (Toolkit.AddGroup) to word it differently or to make it
// active by default.
var ExecGroupDefinition = toolkit.Group{
	Name:        ExecGroup,
	Description: "Run shell commands and Python code on the worker, in the workspace directory.",
	Instructions: "Commands run as the worker's user in the workspace directory, with no input. " +
		"Their output is streamed as it is written and ends with the exit code. " +
		"A command is killed, with every process of its session, when it ends, its timeout passes or the call is cancelled: " +
		"nothing it starts in the background outlives the call, except a process that leaves the session (setsid, a daemon), which is not stopped.",
}

// DefaultGroup returns the group a built-in tool goes into when its Tool
// entry names none: ExecGroup for the shell and Python tools, the basic
// group for the others.
func DefaultGroup(name string) string {
	if name == ExecuteShellCommand || name == ExecutePythonCode {
		return ExecGroup
	}
	return toolkit.BasicGroup
}

// Known reports whether name is a built-in tool.
func Known(name string) bool { return slices.Contains(Names, name) }

// Config says which built-in tools Register adds and how they behave. The
// zero value of every field means its documented default.
type Config struct {
	// Workspace is the directory the file tools are confined to and the
	// working directory of the shell and Python tools. It is created if
	// missing, and made again by a call that finds it removed. Required
	// when any of those tools is on.
	Workspace string
	// SharedWorkspace says every worker of the fleet sees the same
	// Workspace (a shared volume): the file, shell and Python tools are
	// then not session-bound, and any worker may serve a session's calls.
	// Without it they are session-bound (toolkit.SessionBound): a fleet
	// sends a session's calls of them to the worker that has its files.
	SharedWorkspace bool
	// PerSessionWorkspace gives each session its own sub-directory of
	// Workspace (sessions/<session>, identities/<identity>/<session>),
	// created by its first call that writes a file or runs a command (a
	// view_text_file or insert_text_file call makes none: in a session
	// without one, no file exists), and kept: the file tools are
	// confined to it and the shell and Python tools start in it, so two
	// agents never see or overwrite each other's files. The directory's
	// name keeps the case
	// of the session's and the identity's (sessionDir), so on a file
	// system that folds case (macOS's and Windows' by default, an ext4
	// directory with chattr +F) names that differ only in case ("Bob",
	// "bob") share one directory: sessions there need names that differ
	// otherwise.
	PerSessionWorkspace bool
	// MaxSessionWorkspaces is the most session directories of
	// PerSessionWorkspace the workspace holds (those under sessions/ and
	// identities/<identity>/, whoever made them). The worker removes
	// none: past the limit a session without a directory gets none, and
	// its writes and commands end unavailable, saying so, until the
	// operator removes directories of sessions that ended or raises the
	// limit; its views still answer, and sessions that have a directory
	// go on. The worker counts the directories again at most once a
	// second, so directories removed are seen within a second, and on a
	// shared workspace other workers' new directories too. Default
	// 100,000 (DefaultMaxSessionWorkspaces): a fleet making a session a
	// second reaches it in about a day, so an operator using
	// per-session workspaces removes those of sessions that ended from
	// time to time. -1: no limit.
	MaxSessionWorkspaces int
	// Tools lists the tools to register, in order, each with its group.
	// nil means DefaultTools in their default groups; an empty non-nil
	// slice registers nothing.
	Tools []Tool
	// Shell runs execute_shell_command as `Shell -c command`. Default
	// "/bin/sh".
	Shell string
	// Python is the interpreter of execute_python_code, a path or a name
	// looked up on PATH at each call. Default "python3".
	Python string
	// DefaultTimeout applies to shell and Python calls that give no
	// timeout. Default 300s (or MaxTimeout, if lower).
	DefaultTimeout time.Duration
	// MaxTimeout is the longest timeout a call may ask for, and the
	// longest sleep. Default 1h.
	MaxTimeout time.Duration
	// MaxOutputBytes caps what one shell or Python call returns, and the
	// lines a view_text_file call, or an edit's content around its change,
	// shows; the excess is dropped and the result says how much. Default
	// 1 MiB.
	MaxOutputBytes int
	// MaxFileBytes is the largest file the file tools read, and write:
	// an edit that would make a larger file is refused. Default 10 MiB.
	MaxFileBytes int64
}

// Tool turns one built-in tool on.
type Tool struct {
	// Name is one of Names.
	Name string
	// Group is the group to put the tool in; "" means DefaultGroup(Name).
	// It must exist in the toolkit, except ExecGroup, which Register adds
	// when missing (ExecGroupDefinition).
	Group string
}

// Defaults of Config.
const (
	DefaultShell          = "/bin/sh"
	DefaultPython         = "python3"
	DefaultCommandTimeout = 300 * time.Second
	DefaultMaxTimeout     = time.Hour
	DefaultMaxOutputBytes = 1 << 20
	DefaultMaxFileBytes   = 10 << 20

	DefaultMaxSessionWorkspaces = 100_000
)

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	var errs []error
	if cfg.DefaultTimeout < 0 {
		errs = append(errs, fmt.Errorf("builtin: negative default timeout %v", cfg.DefaultTimeout))
	}
	if cfg.MaxTimeout < 0 {
		errs = append(errs, fmt.Errorf("builtin: negative max timeout %v", cfg.MaxTimeout))
	}
	if cfg.MaxOutputBytes < 0 {
		errs = append(errs, fmt.Errorf("builtin: negative max output bytes %d", cfg.MaxOutputBytes))
	}
	if cfg.MaxFileBytes < 0 {
		errs = append(errs, fmt.Errorf("builtin: negative max file bytes %d", cfg.MaxFileBytes))
	}
	if cfg.MaxSessionWorkspaces < -1 {
		errs = append(errs, fmt.Errorf("builtin: max session workspaces %d: want a count, or -1 for no limit", cfg.MaxSessionWorkspaces))
	}
	if cfg.Tools == nil {
		for _, n := range DefaultTools {
			cfg.Tools = append(cfg.Tools, Tool{Name: n})
		}
	}
	seen := map[string]bool{}
	for _, t := range cfg.Tools {
		switch {
		case !Known(t.Name):
			errs = append(errs, fmt.Errorf("builtin: unknown built-in tool %q (known: %v)", t.Name, Names))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("builtin: tool %q listed twice", t.Name))
		}
		seen[t.Name] = true
	}
	cfg.Shell = cmp(cfg.Shell, DefaultShell)
	cfg.Python = cmp(cfg.Python, DefaultPython)
	cfg.MaxTimeout = cmp(cfg.MaxTimeout, DefaultMaxTimeout)
	cfg.DefaultTimeout = cmp(cfg.DefaultTimeout, min(DefaultCommandTimeout, cfg.MaxTimeout))
	cfg.MaxOutputBytes = cmp(cfg.MaxOutputBytes, DefaultMaxOutputBytes)
	cfg.MaxFileBytes = cmp(cfg.MaxFileBytes, DefaultMaxFileBytes)
	cfg.MaxSessionWorkspaces = cmp(cfg.MaxSessionWorkspaces, DefaultMaxSessionWorkspaces)
	if cfg.DefaultTimeout > cfg.MaxTimeout {
		errs = append(errs, fmt.Errorf("builtin: default timeout %v is above the max timeout %v", cfg.DefaultTimeout, cfg.MaxTimeout))
	}
	errs = append(errs, unsupported(cfg)...)
	return cfg, errors.Join(errs...)
}

func cmp[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Register adds the built-in tools cfg turns on to tk. It fails, adding
// nothing, for an unknown or repeated tool name, a group that does not
// exist, a workspace that cannot be created, a negative limit, or a name
// already taken in tk.
func Register(tk *toolkit.Toolkit, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	var ws *workspace
	for _, t := range cfg.Tools {
		if t.Name != Echo && t.Name != Sleep {
			if ws, err = openWorkspace(cfg.Workspace); err != nil {
				return err
			}
			break
		}
	}
	groups := tk.Groups()
	hasGroup := func(name string) bool {
		return name == toolkit.BasicGroup || slices.ContainsFunc(groups, func(g toolkit.Group) bool { return g.Name == name })
	}
	addExec := false
	for _, t := range cfg.Tools {
		g := cmp(t.Group, DefaultGroup(t.Name))
		if !hasGroup(g) {
			if g != ExecGroup {
				return fmt.Errorf("builtin: tool %q: group %q not found (declare it first)", t.Name, g)
			}
			addExec = true
		}
	}
	if addExec {
		if err := tk.AddGroup(ExecGroupDefinition); err != nil {
			return fmt.Errorf("builtin: %w", err)
		}
	}
	var f *files
	var r *runner
	if ws != nil {
		if cfg.PerSessionWorkspace {
			if cfg.MaxSessionWorkspaces > 0 {
				ws.limit = &sessionLimit{max: cfg.MaxSessionWorkspaces}
			}
		}
		f = &files{ws: ws, sessions: cfg.PerSessionWorkspace, maxFile: cfg.MaxFileBytes, maxOutput: cfg.MaxOutputBytes}
		r = &runner{ws: ws, sessions: cfg.PerSessionWorkspace, shell: cfg.Shell, python: cfg.Python,
			defTimeout: cfg.DefaultTimeout, maxTimeout: cfg.MaxTimeout, maxOutput: cfg.MaxOutputBytes}
	}
	var added []string
	for _, t := range cfg.Tools {
		var tool *toolkit.Tool
		var opts []toolkit.Option
		switch t.Name {
		case Echo:
			tool, opts = echoTool(), []toolkit.Option{toolkit.ReadOnly()}
		case Sleep:
			tool, opts = sleepTool(cfg.MaxTimeout), []toolkit.Option{toolkit.ReadOnly()}
		case ViewTextFile:
			tool, opts = f.viewTool(), []toolkit.Option{toolkit.ReadOnly(), toolkit.WithKind(toolkit.KindFileRead)}
		case WriteTextFile:
			tool, opts = f.writeTool(), []toolkit.Option{toolkit.WithKind(toolkit.KindFileWrite)}
		case InsertTextFile:
			tool, opts = f.insertTool(), []toolkit.Option{toolkit.WithKind(toolkit.KindFileWrite)}
		case ExecuteShellCommand:
			tool, opts = r.shellTool(), []toolkit.Option{toolkit.WithKind(toolkit.KindShell)}
		case ExecutePythonCode:
			tool, opts = r.pythonTool(), []toolkit.Option{toolkit.WithKind(toolkit.KindPython)}
		}
		if t.Name != Echo && t.Name != Sleep {
			if !cfg.SharedWorkspace {
				opts = append(opts, toolkit.SessionBound())
			}
			if cfg.PerSessionWorkspace {
				withScope(tool)
			}
		}
		if g := cmp(t.Group, DefaultGroup(t.Name)); g != toolkit.BasicGroup {
			opts = append(opts, toolkit.InGroup(g))
		}
		if err := tk.Add(tool, opts...); err != nil {
			tk.Remove(added...)
			if addExec {
				_ = tk.RemoveGroup(ExecGroup)
			}
			return fmt.Errorf("builtin: %w", err)
		}
		added = append(added, t.Name)
	}
	return nil
}

// prop returns a property of a tool's input schema, to refine what the
// struct tags cannot say.
func prop(t *toolkit.Tool, name string) map[string]any {
	props := t.InputSchema["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	if p == nil {
		panic("builtin: no property " + name) // a programming error in this package
	}
	return p
}

func describe(t *toolkit.Tool, name, description string) { prop(t, name)["description"] = description }
