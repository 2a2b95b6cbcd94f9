package permission

import (
	"path/filepath"
	"slices"
	"strings"
)

// A command may run another: behind a wrapper (sudo rm, env X=1 rm, xargs
// rm), a keyword or a group's opening (then rm, ! rm, (rm, { rm), as a
// script (sh -c 'rm …', eval rm …), as find's -exec, or by its path
// (/bin/rm). Deny and ask rules must see those commands too, or in bypass
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
	"env":     {valued: []string{"-u", "-C", "--unset", "--chdir"}},
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
	"time":    {},
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
		switch {
		case name == "env" && (a == "-S" || strings.HasPrefix(a, "--split-string")):
			// env -S 'cmd args': the string is split into the command.
			if v, ok := strings.CutPrefix(a, "--split-string="); ok {
				script(v)
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
			if slices.Contains(w.valued, a) {
				i++ // its value
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
