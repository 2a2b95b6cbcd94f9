package permission

import (
	"path/filepath"
	"slices"
	"strings"
)

// A command may run another: behind a wrapper (sudo rm, env X=1 rm, xargs
// rm), a keyword or a group's opening (then rm, ! rm, (rm, { rm), as a
// script (sh -c 'rm …', eval rm …, trap 'rm …' EXIT, alias r='rm …'), as
// find's -exec, as a busybox applet, in a function's body or a case
// clause (f() { rm …; }, a) rm …;;), or by its path (/bin/rm). Deny and ask rules must see those commands too, or in bypass
// mode "sudo rm -rf x" would escape a deny rule on rm; so must the safety
// checks ("sudo rm -rf ~").

// wrappers are the commands that run the command after their own options.
// valued lists the options that take a separate value; count is how many
// operands come before the command (timeout's duration).
var wrappers = map[string]struct {
	valued []string
	count  int
}{
	"sudo":    {valued: []string{"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout"}},
	"doas":    {valued: []string{"-u", "-C"}},
	"env":     {valued: []string{"-u", "-C", "-S", "--unset", "--chdir"}},
	"nice":    {valued: []string{"-n", "--adjustment"}},
	"ionice":  {valued: []string{"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}},
	"nohup":   {},
	"setsid":  {},
	"stdbuf":  {valued: []string{"-i", "-o", "-e"}},
	"timeout": {valued: []string{"-s", "-k", "--signal", "--kill-after"}, count: 1},
	"xargs":   {valued: []string{"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--max-lines", "--process-slot-var"}},
	"command": {},
	"builtin": {},
	"exec":    {valued: []string{"-a"}},
	"time":    {valued: []string{"-o", "-f", "--output", "--format"}}, // GNU time's
	"watch":   {valued: []string{"-n", "-d", "--interval", "--differences"}},
	"chroot":  {count: 1},
	// Keywords that begin a command.
	"!": {}, "then": {}, "do": {}, "else": {}, "elif": {}, "if": {}, "while": {}, "until": {}, "{": {}, "(": {},
}

// shells run their -c script.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"}

// wrapped returns the commands c runs besides itself (and those they run),
// reading scripts at most maxNesting deep; err is set when a script
// cannot be read.
func wrapped(c simpleCmd, depth int) (out []simpleCmd, err error) {
	if depth > maxNesting {
		return nil, errTooDeep
	}
	add := func(args []string) {
		if len(args) == 0 {
			return
		}
		w := simpleCmd{args: args}
		out = append(out, w)
		more, e := wrapped(w, depth+1)
		out = append(out, more...)
		if err == nil {
			err = e
		}
	}
	script := func(line string) {
		l, e := parseNested(line, depth+1)
		for _, w := range l.cmds {
			out = append(out, w)
			more, e := wrapped(w, depth+1)
			out = append(out, more...)
			if err == nil {
				err = e
			}
		}
		if err == nil {
			err = e
		}
	}
	args := c.args
	if len(args) == 0 {
		return nil, nil
	}
	name := args[0]
	if body, ok := definedBody(args); ok {
		add(body)
		return out, err
	}
	switch {
	case strings.HasPrefix(name, "(") || strings.HasPrefix(name, "{") && name != "{":
		// "(rm" and "{rm" are "(" or "{" and "rm".
		add(append([]string{strings.TrimLeft(name, "({")}, args[1:]...))
		return out, err
	case strings.Contains(name, "/"):
		add(append([]string{filepath.Base(name)}, args[1:]...))
		return out, err
	case name == "eval":
		script(strings.Join(args[1:], " "))
		return out, err
	case name == "trap":
		// trap [--] ACTION SIGNAL...: the action is a script ("-" resets).
		if rest := slices.DeleteFunc(slices.Clone(args[1:]), func(a string) bool { return a == "--" }); len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			script(rest[0])
		}
		return out, err
	case name == "alias":
		// alias NAME=VALUE: a shell that expands aliases (sh) runs VALUE.
		for _, a := range args[1:] {
			if _, v, ok := strings.Cut(a, "="); ok {
				script(v)
			}
		}
		return out, err
	case name == "coproc":
		// coproc COMMAND, or coproc NAME COMPOUND: either may be what runs.
		add(slices.Clone(args[1:]))
		if len(args) > 2 {
			add(slices.Clone(args[2:]))
		}
		return out, err
	case name == "busybox" && len(args) > 1 && !strings.HasPrefix(args[1], "-"):
		add(slices.Clone(args[1:])) // busybox APPLET ARGS
		return out, err
	case slices.Contains(shells, name):
		// sh [options] -c SCRIPT: a flag cluster with "c" takes the first
		// operand as the script.
		for i, a := range args[1:] {
			if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'c') {
				for _, s := range args[i+2:] {
					if !strings.HasPrefix(s, "-") {
						script(s)
						break
					}
				}
				break
			}
		}
		return out, err
	case name == "find":
		for i := 1; i < len(args); i++ {
			if !slices.Contains([]string{"-exec", "-execdir", "-ok", "-okdir"}, args[i]) {
				continue
			}
			j := i + 1
			for j < len(args) && args[j] != ";" && args[j] != "+" {
				j++
			}
			add(slices.Clone(args[i+1 : j]))
			i = j
		}
		return out, err
	}
	w, ok := wrappers[name]
	if !ok || name == "command" && (slices.Contains(args, "-v") || slices.Contains(args, "-V")) {
		return nil, nil // command -v only looks the name up
	}
	i, operands := 1, 0
	for ; i < len(args); i++ {
		a := args[i]
		opt, attached := valuedInCluster(a, w.valued)
		switch {
		case name == "env" && (opt == "-S" || strings.HasPrefix(a, "--split-string")):
			// env -S 'cmd args', -S'cmd args': the string is split into
			// the command.
			if v, ok := strings.CutPrefix(a, "--split-string="); ok {
				script(v)
			} else if attached != "" {
				script(attached)
			} else if i+1 < len(args) {
				script(args[i+1])
			}
			return out, err
		case name == "env" && isAssignment(a):
		case a == "--":
			rest := args[i+1:]
			if skip := w.count - operands; skip > 0 && skip <= len(rest) {
				rest = rest[skip:]
			}
			add(slices.Clone(rest))
			return out, err
		case strings.HasPrefix(a, "-") && a != "-":
			if slices.Contains(w.valued, a) || opt != "" && attached == "" {
				i++ // its value (-u root, -Eu root)
			}
		case operands < w.count:
			operands++
		default:
			add(slices.Clone(args[i:]))
			return out, err
		}
	}
	return out, err
}

// definedBody is the command the words of a definition or a clause hold,
// which the line's parse took as arguments: a function's body (f() { rm
// x; }, f () (rm x), function f { rm x; }) or a case clause's (case a in
// a) rm x;; b ) rm y;; esac, where each clause after the first is a
// command of its own, "b) rm y").
func definedBody(args []string) ([]string, bool) {
	name := args[0]
	switch {
	case strings.Contains(name, "()"):
		// f(){ …: the rest of the word, if any, begins the body.
		_, rest, _ := strings.Cut(name, "()")
		if rest != "" {
			return append([]string{rest}, args[1:]...), true
		}
		return slices.Clone(args[1:]), true
	case len(args) > 1 && args[1] == "()":
		return slices.Clone(args[2:]), true
	case len(args) > 2 && args[1] == "(" && args[2] == ")":
		return slices.Clone(args[3:]), true
	case name == "function" && len(args) > 1:
		rest := args[2:] // function f { …, function f() { …
		if len(rest) > 0 && rest[0] == "()" {
			rest = rest[1:] // function f () { …
		}
		return slices.Clone(rest), true
	case name == "case":
		// case WORD in PATTERN) BODY: the body follows the first word
		// after "in" that ends with ")".
		in := slices.Index(args, "in")
		if in < 0 {
			return nil, false
		}
		for i := in + 1; i < len(args); i++ {
			if strings.HasSuffix(args[i], ")") {
				return slices.Clone(args[i+1:]), true
			}
		}
		return nil, false
	case strings.HasSuffix(name, ")"):
		return slices.Clone(args[1:]), true // a later clause: "b) rm y"
	}
	// A later clause whose pattern has blanks: "b ) rm y", "a | c ) rm y".
	for i := 1; i < len(args) && i < 8; i++ {
		if args[i] == ")" {
			return slices.Clone(args[i+1:]), true
		}
	}
	return nil, false
}

// valuedInCluster finds, in a cluster of short options (-Eu, -0n1), the
// first that takes a value (one of valued), and the rest of the word,
// which is its value when not empty (-n1); the next word is otherwise
// (-Eu root). opt is "" when the word is no such cluster.
func valuedInCluster(a string, valued []string) (opt, attached string) {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return "", ""
	}
	for k := 1; k < len(a); k++ {
		if o := "-" + a[k:k+1]; slices.Contains(valued, o) {
			return o, a[k+1:]
		}
	}
	return "", ""
}
