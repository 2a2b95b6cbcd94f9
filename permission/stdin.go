package permission

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// linkPipes sets each command's from to a copy of the command piped
// into it (pipes[i], -1: none), the earlier ones first, so a copy holds
// what is piped into it in turn.
func linkPipes(cmds []simpleCmd, pipes []int) {
	for i, f := range pipes {
		if f >= 0 && f < i {
			p := cmds[f]
			cmds[i].from = &p
		}
	}
}

// maxStdinScript bounds the text a command line is read to write to a
// shell's standard input (printf's format again for each of its
// arguments): longer is a script that cannot be read.
const maxStdinScript = 1 << 16

// shellStdin reads the script a shell (args[0] is one of shells) takes
// from its standard input, when it has no -c and no script operand:
// scripts are the texts the line writes to it (a here-document or
// here-string, echo or printf of words the shell does not rewrite, cat
// of those), which it runs as its commands; opaque, when it reads a
// script the line does not hold (a file, a download, $X).
func shellStdin(c simpleCmd) (scripts []string, opaque bool) {
	if !shellReadsStdin(c.args) {
		return nil, false
	}
	return stdinText(c)
}

// stdinText is what c reads as its standard input, when the line says:
// the files redirected to it (of several redirections the last counts,
// so a file read may follow a here-string: bash <<< ls < f), its
// here-documents, or what the command piped into it writes; none when
// the line does not say (the worker's input, which is empty).
func stdinText(c simpleCmd) (texts []string, opaque bool) {
	switch {
	case slices.ContainsFunc(c.inputs, func(f string) bool { return f != "/dev/null" }):
		return nil, true
	case len(c.here) > 0:
		return c.here, false
	case len(c.inputs) > 0:
		return nil, false
	case c.from != nil:
		return writtenText(*c.from)
	}
	return nil, false
}

// writtenText is what p writes to its standard output when the line
// holds it: echo's words (as bash writes them and with the escapes dash's
// echo and echo -e read), printf's format applied to its arguments, or
// what plain cat reads; opaque otherwise.
func writtenText(p simpleCmd) (texts []string, opaque bool) {
	if len(p.args) == 0 || p.expands || p.dollar || p.nameDollar || p.nameGlob || p.subst {
		return nil, true
	}
	args := p.args[1:]
	switch filepath.Base(p.args[0]) {
	case "echo":
		for len(args) > 0 && len(args[0]) > 1 && strings.Trim(args[0], "-neE") == "" && args[0][0] == '-' {
			args = args[1:]
		}
		s := strings.Join(args, " ")
		e, _ := unescape(s, false)
		if len(s) > maxStdinScript {
			return nil, true
		}
		return slices.Compact([]string{s, e}), false
	case "printf":
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return nil, true // printf -v NAME: nothing written
		}
		s, ok := printfText(args[0], args[1:])
		return []string{s}, !ok
	case "cat":
		if len(args) == 0 || len(args) == 1 && args[0] == "-" {
			return stdinText(p)
		}
	}
	return nil, true
}

// printfText is what printf FORMAT ARGS... writes, for a format whose
// conversions are %s, %b and %%; ok is false for any other conversion
// or a text longer than maxStdinScript.
func printfText(format string, args []string) (string, bool) {
	var b strings.Builder
	for {
		used := 0
		for i := 0; i < len(format); {
			if b.Len() > maxStdinScript {
				return "", false
			}
			ch := format[i]
			conv := byte(0)
			if ch == '%' && i+1 < len(format) {
				conv = format[i+1]
			}
			switch {
			case ch == '\\':
				piece, next, stop := escapeAt(format, i, true)
				if b.WriteString(piece); stop {
					return b.String(), true
				}
				i = next
			case conv == '%':
				b.WriteByte('%')
				i += 2
			case conv == 's' || conv == 'b':
				arg := ""
				if used < len(args) {
					arg = args[used]
				}
				used++
				if conv == 'b' {
					s, stop := unescape(arg, false)
					if b.WriteString(s); stop {
						return b.String(), true
					}
				} else {
					b.WriteString(arg)
				}
				i += 2
			case ch == '%':
				return "", false // %d, %5s, %q, …
			default:
				b.WriteByte(ch)
				i++
			}
		}
		if used == 0 || used >= len(args) {
			return b.String(), b.Len() <= maxStdinScript
		}
		args = args[used:]
	}
}

// unescape reads the backslash escapes echo -e (and dash's echo) and
// printf's %b read: \n, \t, \\, \0NNN, \xHH, … (\c ends the output:
// stop). An unknown escape is kept as written.
func unescape(s string, format bool) (out string, stop bool) {
	if !strings.Contains(s, `\`) {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		piece, next, stop := escapeAt(s, i, format)
		if b.WriteString(piece); stop {
			return b.String(), true
		}
		i = next
	}
	return b.String(), false
}

// escapeAt reads the escape at s[i] (a backslash): what it writes, the
// index after it, and stop for \c. In printf's format (format) an octal
// escape is \NNN; elsewhere \0NNN.
func escapeAt(s string, i int, format bool) (piece string, next int, stop bool) {
	if i+1 == len(s) {
		return `\`, i + 1, false
	}
	c := s[i+1]
	if k := strings.IndexByte("ntrabfv\\eE", c); k >= 0 {
		return string("\n\t\r\a\b\f\v\\\x1b\x1b"[k]), i + 2, false
	}
	digits := func(from, n int, set string) int {
		j := from
		for j < len(s) && j < from+n && strings.IndexByte(set, s[j]) >= 0 {
			j++
		}
		return j
	}
	switch {
	case c == 'c':
		return "", i + 2, true
	case c == 'x':
		j := digits(i+2, 2, "0123456789abcdefABCDEF")
		if j == i+2 {
			return `\x`, i + 2, false
		}
		v, _ := strconv.ParseUint(s[i+2:j], 16, 8)
		return string([]byte{byte(v)}), j, false
	case c >= '0' && c <= '7' && (format || c == '0'):
		from := i + 1
		if c == '0' && !format {
			from = i + 2
		}
		j := digits(from, 3, "01234567")
		v, _ := strconv.ParseUint("0"+s[from:j], 8, 16)
		return string([]byte{byte(v)}), j, false
	}
	return s[i : i+2], i + 2, false
}

// stdinPaths name a process's standard input as a file.
var stdinPaths = []string{"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}

// shellReadsStdin reports whether a shell's words leave it reading its
// script from its standard input: no -c, and -s, no script operand
// after its options or one of stdinPaths (-o and -O take a value, as do
// --rcfile and --init-file; "-" and "--" end them).
func shellReadsStdin(args []string) bool {
	if len(args) == 0 || filepath.Base(args[0]) == "busybox" {
		return false
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-" || a == "--":
			return i+1 == len(args) || slices.Contains(stdinPaths, args[i+1])
		case strings.HasPrefix(a, "--"):
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if a[0] == '-' && strings.ContainsRune(a, 'c') {
				return false // its script is -c's
			}
			if strings.ContainsRune(a[1:], 's') {
				return true // the operands are the script's arguments
			}
			i += strings.Count(a[1:], "o") + strings.Count(a[1:], "O")
		default:
			return slices.Contains(stdinPaths, a) // a script file
		}
	}
	return true
}

// loginShell reports whether name (a wrapper, w its options), given
// args without a command, runs a shell, which reads its script from its
// input: su and runuser without -c (--command, --session-command), sudo
// -s or -i (--shell, --login), doas -s, pkexec.
func loginShell(name string, args []string, w wrapper) bool {
	has := func(letters string, longs ...string) bool {
		return slices.ContainsFunc(args[1:], func(a string) bool {
			long, _, _ := strings.Cut(a, "=")
			return slices.ContainsFunc([]byte(letters), func(l byte) bool { return clusterHas(a, w, l) }) ||
				slices.ContainsFunc(longs, func(o string) bool { return abbreviates(long, o) })
		})
	}
	switch name {
	case "su", "runuser":
		return !has("c", "--command", "--session-command")
	case "sudo":
		return has("si", "--shell", "--login")
	case "doas":
		return has("s")
	case "pkexec":
		return true
	}
	return false
}
