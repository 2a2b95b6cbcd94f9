package permission

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/toolbus/toolbus/toolkit"
)

// Kind is how the permission engine sees a tool. It comes from the tool
// (toolkit.Tool.Kind, set by the code that built it: the built-ins, the
// MCP client, the skill viewer), never from its name, so a tool of one's
// own named view_text_file is a function tool like any other.
type Kind int

const (
	// KindFunction: a tool written in Go (or any tool not named below).
	KindFunction Kind = iota
	// KindMCP: a tool proxied from an MCP server (name "mcp__<server>__<tool>");
	// its ReadOnly flag comes from the server's readOnlyHint.
	KindMCP
	// KindMeta: reset_tools.
	KindMeta
	// KindSkill: the Skill viewer.
	KindSkill
	// KindShell: execute_shell_command; input key "command".
	KindShell
	// KindPython: execute_python_code; input key "code".
	KindPython
	// KindFileRead: view_text_file; input key "file_path" (or "path").
	KindFileRead
	// KindFileWrite: write_text_file and insert_text_file; input key
	// "file_path" (or "path").
	KindFileWrite
)

// Names of the built-in tools the engine knows.
const (
	ShellTool      = "execute_shell_command"
	PythonTool     = "execute_python_code"
	ViewFileTool   = "view_text_file"
	WriteFileTool  = "write_text_file"
	InsertFileTool = "insert_text_file"
	SkillTool      = "Skill"
	MCPPrefix      = "mcp__"
)

var toolKinds = map[string]Kind{
	toolkit.KindMeta:      KindMeta,
	toolkit.KindSkill:     KindSkill,
	toolkit.KindShell:     KindShell,
	toolkit.KindPython:    KindPython,
	toolkit.KindFileRead:  KindFileRead,
	toolkit.KindFileWrite: KindFileWrite,
	toolkit.KindMCP:       KindMCP,
}

// KindOf returns the kind of a tool: from what its builder declared
// (toolkit.Tool.Kind); a tool that declares none is a function tool.
func KindOf(t *toolkit.Tool) Kind { return toolKinds[t.Kind()] }

// String returns the kind's name ("function", "mcp", "shell", …).
func (k Kind) String() string {
	return [...]string{"function", "mcp", "meta", "skill", "shell", "python", "file_read", "file_write"}[k]
}

// kindSpec is everything the engine needs to know about one kind of tool.
// The whole table is `kinds` below: what is read-only, what the tool's own
// check says, what rule patterns are matched against and what rules are
// suggested.
type kindSpec struct {
	// readOnly: step 3, the fast path that allows in every mode.
	readOnly func(t *toolkit.Tool, in map[string]any) bool
	// mayReadOnly: some call of the tool can be read-only (used to hide
	// tools in ModeExplore).
	mayReadOnly func(t *toolkit.Tool) bool
	// check: step 4, the tool's own opinion. Behavior "" means none.
	check func(p Policy, t *toolkit.Tool, in map[string]any) Decision
	// subjects: what rule patterns are matched against (nil: only
	// name-level rules match).
	subjects func(p Policy, in map[string]any) []subject
	// match: a pattern against one subject.
	match func(pattern, subject string) bool
	// paths: the subjects are paths, and so are the patterns.
	paths bool
	// suggest: rules that would allow the call.
	suggest func(p Policy, t *toolkit.Tool, in map[string]any) []Rule
}

var kinds = map[Kind]kindSpec{
	KindFunction: {
		readOnly:    flagReadOnly,
		mayReadOnly: func(t *toolkit.Tool) bool { return t.ReadOnly() },
		check:       askCheck("Permission required for %s."),
		suggest:     nameRule,
	},
	KindMCP: {
		readOnly:    flagReadOnly,
		mayReadOnly: func(t *toolkit.Tool) bool { return t.ReadOnly() },
		check:       askCheck("MCP tools must be explicitly allowed by the user (%s)."),
		suggest:     nameRule,
	},
	KindMeta: {
		readOnly:    never,
		mayReadOnly: func(*toolkit.Tool) bool { return false },
		check:       allowCheck,
		suggest:     nameRule,
	},
	KindSkill: {
		readOnly:    always,
		mayReadOnly: func(*toolkit.Tool) bool { return true },
		check:       allowCheck,
		suggest:     nameRule,
	},
	KindShell: {
		readOnly:    func(_ *toolkit.Tool, in map[string]any) bool { return shellReadOnly(str(in, "command")) },
		mayReadOnly: func(*toolkit.Tool) bool { return true },
		check:       shellCheck,
		subjects:    shellSubjects,
		match:       matchCommand,
		suggest:     shellSuggest,
	},
	KindPython: {
		readOnly:    never,
		mayReadOnly: func(*toolkit.Tool) bool { return false },
		check:       askCheck("Permission required for %s: it runs arbitrary code."),
		suggest:     nameRule,
	},
	KindFileRead: {
		readOnly:    always,
		mayReadOnly: func(*toolkit.Tool) bool { return true },
		check:       allowCheck,
		subjects:    fileSubjects,
		match:       matchGlob,
		paths:       true,
		suggest:     fileSuggest,
	},
	KindFileWrite: {
		readOnly:    never,
		mayReadOnly: func(*toolkit.Tool) bool { return false },
		check:       fileWriteCheck,
		subjects:    fileSubjects,
		match:       matchGlob,
		paths:       true,
		suggest:     fileSuggest,
	},
}

func flagReadOnly(t *toolkit.Tool, _ map[string]any) bool { return t.ReadOnly() }
func always(*toolkit.Tool, map[string]any) bool           { return true }
func never(*toolkit.Tool, map[string]any) bool            { return false }

func allowCheck(_ Policy, t *toolkit.Tool, _ map[string]any) Decision {
	return Decision{Behavior: Allow, Reason: "tool check", Message: fmt.Sprintf("%s is always allowed.", t.Name)}
}

// askCheck is the check of tools that have no opinion beyond "ask": a
// non-safety ASK, which lets allow rules and the mode decide.
func askCheck(format string) func(Policy, *toolkit.Tool, map[string]any) Decision {
	return func(_ Policy, t *toolkit.Tool, _ map[string]any) Decision {
		return Decision{Behavior: Ask, Reason: "tool check", Message: fmt.Sprintf(format, t.Name)}
	}
}

func nameRule(_ Policy, t *toolkit.Tool, _ map[string]any) []Rule {
	return []Rule{{Tool: t.Name, Behavior: Allow, Source: "suggested"}}
}

func str(in map[string]any, key string) string {
	s, _ := in[key].(string)
	return s
}

// filePath is a file tool's target: "file_path", or "path", made
// absolute as the kernel takes it (absPath).
func filePath(p Policy, in map[string]any) string {
	f := str(in, "file_path")
	if f == "" {
		f = str(in, "path")
	}
	if f == "" {
		return ""
	}
	return absPath(f, p.WorkingDirs)
}

// filePaths are the ways a file tool may read its target: as the kernel
// does (filePath: "~" expanded, ".." after a link to the parent of its
// target), and as a tool that cleans the path first (the built-in ones:
// ".." lexical, "~" and "$HOME" a directory of that name), each also
// with "~" expanded. The first is filePath's.
func filePaths(p Policy, in map[string]any) []string {
	first := filePath(p, in)
	if first == "" {
		return nil
	}
	f := str(in, "file_path")
	if f == "" {
		f = str(in, "path")
	}
	out := []string{first}
	for _, q := range []string{f, expandHome(f)} {
		if !filepath.IsAbs(q) && len(p.WorkingDirs) > 0 {
			q = p.WorkingDirs[0] + "/" + q
		}
		if q = filepath.Clean(q); !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// subject is what a rule pattern is matched against: a shell sub-command
// or a file path. A read-only subject need not be covered by allow rules.
type subject struct {
	text string
	// allowText, when set, is what allow rules must match instead of text
	// (a shell command with its variable assignments).
	allowText string
	readOnly  bool
	// outer, for a command another runs, is the line's command that runs
	// it (with its assignments): an allow rule on it that names this
	// command's words too ("sudo rm:*" for "sudo rm x") covers it.
	outer string
	// denyOnly: for deny and ask rules only: another reading of a command
	// (/bin/rm as rm, git -C dir push as git push), which allow rules
	// cover as written, and a here-document's command.
	denyOnly bool
	// writes: the command redirects its output to a file outside the
	// working directories (writesOutside), which a rule naming the
	// command does not cover: no allow pattern but "*" does.
	writes bool
	// opaque: what runs cannot be told (an unparsable line, scripts or
	// wrappers nested too deep): every deny and ask pattern matches it,
	// no allow pattern covers it.
	opaque bool
}

// fileSubjects are the ways the call's path may be read (filePaths)
// and, when a symbolic link leads elsewhere, where each leads: a deny or
// ask rule on any matches, an allow rule must cover all.
func fileSubjects(p Policy, in map[string]any) []subject {
	var out []subject
	for _, f := range filePaths(p, in) {
		for _, q := range []string{f, realPath(f)} {
			if (q == f || filepath.IsAbs(f)) && !slices.ContainsFunc(out, func(s subject) bool { return s.text == q }) {
				out = append(out, subject{text: q})
			}
		}
	}
	return out
}

func fileWriteCheck(p Policy, t *toolkit.Tool, in map[string]any) Decision {
	subjects := fileSubjects(p, in)
	if len(subjects) == 0 {
		return Decision{}
	}
	f := subjects[0].text
	for _, s := range subjects { // through a symbolic link too
		if why := dangerousPath(s.text); why != "" {
			return Decision{Behavior: Ask, Safety: true, Reason: "safety check",
				Message: fmt.Sprintf("%s on %s needs confirmation: %s.", t.Name, f, why)}
		}
	}
	inside := func(q string) bool { return inWorkingDirs(q, p.WorkingDirs) }
	if p.Mode.orDefault() == ModeAcceptEdits && !slices.ContainsFunc(filePaths(p, in), func(q string) bool { return !inside(q) }) {
		return Decision{Behavior: Allow, Reason: "tool check", Message: "Edits inside the working directories are accepted."}
	}
	return Decision{}
}

func fileSuggest(p Policy, t *toolkit.Tool, in map[string]any) []Rule {
	f := filePath(p, in)
	if f == "" || !filepath.IsAbs(f) {
		return nameRule(p, t, in)
	}
	return []Rule{{Tool: t.Name, Pattern: escapeGlob(filepath.ToSlash(filepath.Dir(f))) + "/**", Behavior: Allow, Source: "suggested"}}
}

// escapeGlob is a path pattern that matches s itself: "*", "?" and "["
// in brackets, as Python's glob.escape writes them.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, "*?[") {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if c == '*' || c == '?' || c == '[' {
			b.WriteString("[" + string(c) + "]")
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

func shellSubjects(p Policy, in map[string]any) []subject {
	cmd := str(in, "command")
	line, err := parseShell(cmd)
	var out []subject
	if err != nil || len(line.cmds) == 0 {
		// The line as written, and the commands read before the error.
		out = append(out, subject{text: strings.Join(strings.Fields(cmd), " "), opaque: err != nil})
		line.subst = true // nothing here is read-only
	}
	// The commands of here-documents' bodies, which may be scripts (bash
	// <<EOF): for deny and ask rules, and on a line that runs a shell for
	// allow rules as well. On a line that runs a shell, a body
	// that sets a variable whose code a shell runs (PS4, BASH_ENV) may
	// run anything, as such an assignment on the line does.
	feeds := len(line.data) > 0 && runsShell(line)
	for _, c := range line.data {
		for _, w := range append([]simpleCmd{c}, wrappedOrNone(c)...) {
			if feeds && !w.reading {
				// A shell may run the body as its script (bash <<EOF):
				// its commands are the line's for allow rules too.
				out = append(out, subject{text: w.text(), allowText: w.fullText(), readOnly: !line.subst && readOnlyCmd(w),
					writes: writesOutside(w, p.WorkingDirs)})
			} else {
				out = append(out, subject{text: w.text(), denyOnly: true})
			}
			if feeds && setsCodeVar(w) {
				out = append(out, subject{text: w.text(), denyOnly: true, opaque: true})
			}
		}
	}
	// The commands c runs (sudo rm, sh -c 'rm', find -exec rm).
	runs := func(c simpleCmd) {
		inner, err := wrappedIn(c)
		for _, w := range inner {
			// A command c runs is one of the line's for allow rules too
			// (find -exec rm, xargs rm, sudo rm); another reading of c
			// (/bin/rm as rm) is covered by the rule that covers c.
			out = append(out, subject{text: w.text(), allowText: w.fullText(), denyOnly: w.reading,
				readOnly: !line.subst && readOnlyCmd(w), outer: c.fullText(), writes: writesOutside(w, p.WorkingDirs)})
		}
		// A name the shell computes ($X, ${x:-rm}, $(echo rm), a pattern
		// /bin/r[m]) may be any command, as may one a wrapper runs by
		// such a name (sudo $X, sudo `echo rm`, sudo /bin/r?).
		// So may a shell given a variable whose value it runs
		// (BASH_ENV=f bash, PS4='$(rm x)', export PROMPT_COMMAND=…).
		// And so may a package manager told to run another project's
		// scripts (npm test --prefix /srv/other).
		elsewhere := func(w simpleCmd) bool { return otherProject(w, p.WorkingDirs) }
		if err != nil || c.nameDollar || c.nameGlob || slices.ContainsFunc(inner, func(w simpleCmd) bool { return len(w.args) > 0 && computedName(w.args[0]) }) ||
			setsCodeVar(c) || slices.ContainsFunc(inner, setsCodeVar) || elsewhere(c) || slices.ContainsFunc(inner, elsewhere) {
			out = append(out, subject{text: c.text(), opaque: true})
		}
	}
	for _, c := range line.cmds {
		writes := writesOutside(c, p.WorkingDirs)
		// As dash reads "&>", the ">" after its "&" only makes a file:
		// inside, the rules for the line's other commands cover it as
		// bash's reading (a redirection of the command before) is.
		made := c.ampOut && len(c.args) == 0 && len(c.assigns) == 0 && !writes
		out = append(out, subject{text: c.text(), allowText: c.fullText(), readOnly: !line.subst && (readOnlyCmd(c) || made),
			writes: writes})
		runs(c)
		if len(c.braced) > 0 && !readOnlyCmd(c) {
			// And the command its brace expansions make ("{rm,} x" is
			// "rm x", "{sudo,rm,x}" runs rm), which rules must see as
			// well (one too large to expand is a safety ask).
			if e, ok := expanded(c); ok {
				out = append(out, subject{text: e.text(), allowText: e.fullText(), writes: writesOutside(e, p.WorkingDirs)})
				runs(e)
			}
		}
	}
	return out
}

// writesOutside reports a write of c (an output redirection, or a file
// its arguments name for writing: writtenPaths) to a file outside the
// working directories (symbolic links resolved), or one the shell names
// ($OUT, ~user); with no working directories, to an absolute path, "~"
// or a path with "..", outside the shell's directory. Writing there is
// what write_text_file asks for, so a rule that names the command does
// not cover it. /dev/null, /dev/stdout and /dev/stderr are no file.
func writesOutside(c simpleCmd, workingDirs []string) bool {
	return slices.ContainsFunc(throughLinks(c, writtenPaths(c), workingDirs), func(o string) bool {
		return !slices.Contains(harmlessDevices, o) && outside(o, workingDirs)
	})
}

// outside reports a path (as the shell gives it to a command) outside
// the working directories (symbolic links resolved), or one the shell
// names ($OUT, ~user); with no working directories, an absolute path,
// "~" or a path with "..", outside the shell's directory.
func outside(p string, workingDirs []string) bool {
	switch {
	case shellExpands(p):
		return true
	case len(workingDirs) == 0:
		return filepath.IsAbs(p) || strings.HasPrefix(p, "~") || slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..")
	}
	return !inWorkingDirs(absPath(p, workingDirs), workingDirs)
}

// otherProject reports a package manager c told to run the scripts of
// a project outside the working directories (projectDirs), which rules
// naming its scripts do not trust: that project's package.json says
// what they run.
func otherProject(c simpleCmd, workingDirs []string) bool {
	return slices.ContainsFunc(inDirs(c, projectDirs(c)), func(d string) bool { return outside(d, workingDirs) })
}

// runsShell reports whether a command of the line, or one it runs, is a
// shell (sh, bash, sudo bash, /bin/sh), which may read its script from a
// here-document or from a pipe.
func runsShell(line shellLine) bool {
	isShell := func(c simpleCmd) bool { return len(c.args) > 0 && slices.Contains(shells, filepath.Base(c.args[0])) }
	for _, c := range line.cmds {
		if isShell(c) || slices.ContainsFunc(wrappedOrNone(c), isShell) {
			return true
		}
	}
	return false
}

// codeVars are the variables whose value a shell runs, or that make it
// run code: BASH_ENV and ENV name a file bash (sh -i, a POSIX-mode bash)
// sources, zsh sources $ZDOTDIR/.zshenv, PROMPT_COMMAND runs before a
// prompt, the prompts' command substitutions run when shown (PS4's under
// xtrace), SHELLOPTS and BASHOPTS set options (xtrace, extdebug) in the
// shells that inherit them; BASH_FUNC_NAME%% (codeVarPrefix) defines a
// function NAME in them.
var codeVars = []string{"BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4", "SHELLOPTS", "BASHOPTS"}

const codeVarPrefix = "BASH_FUNC_"

// declarers are the commands whose NAME=VALUE words set variables.
var declarers = []string{"env", "export", "declare", "typeset", "local", "readonly"}

// assignWordRE is a word the shell reads as an assignment before a
// command: NAME=, NAME+=, NAME[SUBSCRIPT]=.
var assignWordRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)

// setsCodeVar reports whether c sets one of codeVars: before its words
// (BASH_ENV=f bash, PS4+=x bash), as a bare assignment, or through
// env, export, declare, typeset, local or readonly.
func setsCodeVar(c simpleCmd) bool {
	isCodeVar := func(w string) bool {
		name, _, ok := strings.Cut(w, "=")
		return ok && isCodeName(strings.TrimSuffix(name, "+"))
	}
	if slices.ContainsFunc(c.assigns, isCodeVar) {
		return true
	}
	if len(c.args) > 0 && slices.Contains(declarers, c.args[0]) {
		return slices.ContainsFunc(c.args[1:], isCodeVar)
	}
	if len(c.args) > 0 {
		// Builtins that set the variables they name: printf -v NAME,
		// read [-a NAME] NAME…, mapfile and readarray [ARRAY].
		var named []string
		switch c.args[0] {
		case "printf":
			named, _ = builtinWords(c.args, "v", "")
		case "read":
			var operands []string
			named, operands = builtinWords(c.args, "a", "dinNptu")
			named = append(named, operands...)
		case "mapfile", "readarray":
			var operands []string
			_, operands = builtinWords(c.args, "", "CcdnOsu")
			named = operands
		}
		if slices.ContainsFunc(named, isCodeName) {
			return true
		}
	}
	for _, a := range c.args {
		if !assignWordRE.MatchString(a) {
			break
		}
		if isCodeVar(a) {
			return true
		}
	}
	return false
}

// isCodeName reports whether a variable's name, its subscript aside
// (PS4[0]), is one of codeVars or a function's (codeVarPrefix).
func isCodeName(name string) bool {
	name, _, _ = strings.Cut(name, "[")
	return slices.Contains(codeVars, name) || strings.HasPrefix(name, codeVarPrefix)
}

// builtinWords reads a bash builtin's words as its getopt does: short
// options, clustered, up to "--" or the first operand. named are the
// values of the options in named (letters), which name variables;
// options in valued take a value too (the rest of the word or the next
// one). operands are the words after the options.
func builtinWords(args []string, named, valued string) (names, operands []string) {
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		for k := 1; k < len(a); k++ {
			letter := a[k]
			if !strings.ContainsRune(named+valued, rune(letter)) {
				continue
			}
			v := a[k+1:]
			if v == "" && i+1 < len(args) {
				i++
				v = args[i]
			}
			if strings.ContainsRune(named, rune(letter)) {
				names = append(names, v)
			}
			break
		}
	}
	if i < len(args) {
		operands = args[i:]
	}
	return names, operands
}

// computedName reports a command name, its quotes removed, that the
// shell may compute: an expansion or a pattern ("*", "?", "[…]"). A
// quoted pattern reads as one too: deny and ask rules then match more.
func computedName(name string) bool {
	if strings.ContainsAny(name, "$`*?") {
		return true
	}
	i := strings.Index(name, "[")
	return i >= 0 && strings.Contains(name[i+1:], "]")
}

func shellCheck(p Policy, t *toolkit.Tool, in map[string]any) Decision {
	line, err := parseShell(str(in, "command"))
	if why := shellSafety(line, err, p.WorkingDirs); why != "" {
		return Decision{Behavior: Ask, Safety: true, Reason: "safety check",
			Message: fmt.Sprintf("%s needs confirmation: %s.", t.Name, why)}
	}
	if p.Mode.orDefault() == ModeAcceptEdits && shellEditsInside(line, p.WorkingDirs) {
		return Decision{Behavior: Allow, Reason: "tool check", Message: "File-system commands inside the working directories are accepted."}
	}
	return Decision{}
}

func shellSuggest(p Policy, t *toolkit.Tool, in map[string]any) []Rule {
	line, err := parseShell(str(in, "command"))
	if err != nil || line.subst {
		return nil // only a one-shot approval fits
	}
	var out []Rule
	seen := map[string]bool{}
	// The line's commands, and those they run that the rule suggested for
	// the command running them does not name (find -exec rm: "rm:*").
	var cmds []simpleCmd
	for _, c := range line.cmds {
		if readOnlyCmd(c) {
			continue
		}
		cmds = append(cmds, c)
		inner, err := wrappedIn(c)
		if err != nil || otherProject(c, p.WorkingDirs) {
			return nil // only a one-shot approval fits
		}
		for _, w := range inner {
			if writesOutside(w, p.WorkingDirs) || otherProject(w, p.WorkingDirs) {
				return nil // sudo sort -o /srv/x: no rule covers the write
			}
			if !w.reading && !readOnlyCmd(w) && !namesInner(suggestPrefix(c), c.fullText(), w.text()) {
				cmds = append(cmds, w)
			}
		}
	}
	// And those of a script a shell reads from a here-document or a
	// here-string (bash <<EOF).
	body, ok := scriptBodyCommands(line)
	if !ok {
		return nil // only a one-shot approval fits
	}
	cmds = append(cmds, body...)
	if slices.ContainsFunc(cmds, func(c simpleCmd) bool { return writesOutside(c, p.WorkingDirs) }) {
		return nil // no command rule covers the write: a one-shot approval fits
	}
	for _, c := range cmds {
		r := Rule{Tool: t.Name, Pattern: suggestPrefix(c), Behavior: Allow, Source: "suggested"}
		if r.Pattern == "" || seen[r.Pattern] {
			continue
		}
		if r.Validate() != nil {
			// A name the shell reads with a character a rule trims
			// ("\r", a no-break space): no rule allows it as written.
			return nil
		}
		if len(out) == maxSuggested {
			return nil // too many to review as rules: a one-shot approval fits
		}
		seen[r.Pattern] = true
		out = append(out, r)
	}
	return out
}

// maxSuggested bounds the rules suggested for one command line.
const maxSuggested = 16
