package permission

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// optSpec is how a tool's options are read, as getopt_long reads them:
// short holds the letters that take a value (the rest of the word, or
// the next word), long the long options that take one (--name=V or
// --name V; abbreviated when abbrev, unless the word is one of flags);
// optional those whose value is only the rest of the word (sed -i.bak).
// Options and operands mix unless stopAtOperand; "--" ends the
// options. oldStyle: a first word without "-" is a cluster of letters
// whose values are the words after it, in order (tar xf a.tar).
type optSpec struct {
	short, optional                 string
	long, flags                     []string
	abbrev, stopAtOperand, oldStyle bool
}

// optValue is an option given a value: opt as the spec names it ("-I",
// "--to-command").
type optValue struct{ opt, v string }

// values reads words (a command's words after its name).
func (s optSpec) values(words []string) (vals []optValue, operands []string) {
	i := 0
	if s.oldStyle && len(words) > 0 && !strings.HasPrefix(words[0], "-") {
		next := 1
		for _, l := range words[0] {
			if strings.ContainsRune(s.short, l) && next < len(words) {
				vals = append(vals, optValue{"-" + string(l), words[next]})
				next++
			}
		}
		i = next
	}
	for ; i < len(words); i++ {
		a := words[i]
		switch {
		case a == "--":
			return vals, append(operands, words[i+1:]...)
		case strings.HasPrefix(a, "--"):
			name, v, has := strings.Cut(a, "=")
			opt := s.longName(name)
			if opt == "" {
				continue
			}
			if !has {
				if i+1 == len(words) {
					continue
				}
				i++
				v = words[i]
			}
			vals = append(vals, optValue{opt, v})
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				if strings.IndexByte(s.optional, a[k]) >= 0 {
					if a[k+1:] != "" {
						vals = append(vals, optValue{"-" + a[k:k+1], a[k+1:]})
					}
					break
				}
				if strings.IndexByte(s.short, a[k]) < 0 {
					continue
				}
				v := a[k+1:]
				if v == "" && i+1 < len(words) {
					i++
					v = words[i]
				}
				vals = append(vals, optValue{"-" + a[k:k+1], v})
				break
			}
		case s.stopAtOperand:
			return vals, append(operands, words[i:]...)
		default:
			operands = append(operands, a)
		}
	}
	return vals, operands
}

// longName is the long option a word names, "" for a flag.
func (s optSpec) longName(name string) string {
	if slices.Contains(s.long, name) {
		return name
	}
	if !s.abbrev || slices.Contains(s.flags, name) {
		return ""
	}
	for _, l := range s.long {
		if abbreviates(name, l) {
			return l
		}
	}
	return ""
}

var (
	tarOptions = optSpec{short: "bCfFgHIKLNTVX", abbrev: true, oldStyle: true,
		long: []string{"--use-compress-program", "--to-command", "--checkpoint-action", "--info-script",
			"--new-volume-script", "--rsh-command"},
		flags: []string{"--checkpoint"}}
	rsyncOptions = optSpec{short: "eBfMT@", long: []string{"--rsh"}}
	rgOptions    = optSpec{short: "eEfgtTABCmMjrd", long: []string{"--pre", "--hostname-bin"}}
	makeOptions  = optSpec{short: "CfIoWE", long: []string{"--eval"}, abbrev: true}
	awkOptions   = optSpec{short: "fvFeiElW", abbrev: true, stopAtOperand: true,
		long: []string{"--file", "--assign", "--field-separator", "--source", "--include", "--exec", "--load"}}
	sedOptions   = optSpec{short: "efl", optional: "i", long: []string{"--expression", "--file", "--line-length"}, abbrev: true}
	splitOptions = optSpec{short: "abClnt", abbrev: true, long: []string{"--filter", "--suffix-length", "--additional-suffix",
		"--bytes", "--line-bytes", "--lines", "--number", "--separator"}}
	sortOptions = optSpec{short: "kSoTt", abbrev: true, long: []string{"--compress-program", "--batch-size", "--buffer-size",
		"--field-separator", "--files0-from", "--key", "--output", "--parallel", "--random-source", "--sort",
		"--temporary-directory"}}
)

// awks are the awk interpreters; seds, sed; tars, tar (GNU tar
// installed as gtar, libarchive's bsdtar).
var (
	awks = []string{"awk", "gawk", "mawk", "nawk"}
	seds = []string{"sed", "gsed"}
	tars = []string{"tar", "gtar", "bsdtar"}
)

// makeShellRE is make's SHELL variable set on its command line
// (SHELL=, SHELL:=, SHELL::=, SHELL+=, SHELL?=, SHELL!=).
var makeShellRE = regexp.MustCompile(`^SHELL(:{0,3}|[+?!])=`)

// toolRuns reads the commands a tool runs by its options and operands:
// tar's --to-command, --use-compress-program (-I), --info-script (-F),
// --new-volume-script, --rsh-command and --checkpoint-action=exec=
// (also in TAR_OPTIONS), rsync's -e (--rsh, RSYNC_RSH), split's
// --filter, sort's --compress-program, the commands ssh, scp and sftp
// run here (sshRuns), rg's --pre and
// --hostname-bin, make's SHELL= (also in MAKEFLAGS), zip's -TT
// (--unzip-command), the command of cmake -E env, time and chdir
// (cmakeCommandRuns), awk's and sed's
// code, and the input source (or ".") of /dev/stdin runs. Scripts are given to script and programs to add; opaque when
// what runs cannot be read (awk or sed code that runs a command, or
// read from a file; make --eval; an ssh config file named on the line;
// a shell fed what the tool chooses:
// tar --to-command=bash, rg --pre sh). ok is false for other commands.
func toolRuns(c simpleCmd, add func([]string), script func(string)) (opaque, ok bool) {
	if len(c.args) == 0 {
		return false, false
	}
	name, words := c.args[0], c.args[1:]
	env := func(key string) []string {
		var out []string
		for _, a := range c.environ() {
			if k, v, _ := strings.Cut(a, "="); k == key {
				out = append(out, v)
			}
		}
		return out
	}
	// fed: a program the tool gives its own input or arguments (a
	// file's contents, a path), which a shell would run as its script.
	fed := func(v string) {
		if f := strings.Fields(v); len(f) > 0 && slices.Contains(shells, filepath.Base(f[0])) {
			opaque = true
		}
		script(v)
	}
	switch {
	case (name == "source" || name == ".") && len(words) > 0 && slices.Contains(stdinPaths, words[0]):
		// source /dev/stdin runs its input, as a shell reading it does.
		var texts []string
		texts, opaque = stdinText(c)
		for _, t := range texts {
			script(t)
		}
	case slices.Contains(tars, name):
		vals, _ := tarOptions.values(words)
		for _, o := range env("TAR_OPTIONS") {
			more, _ := tarOptions.values(strings.Fields(o))
			vals = append(vals, more...)
		}
		for _, o := range vals {
			switch o.opt {
			case "-I", "--use-compress-program", "--to-command":
				fed(o.v)
			case "-F", "--info-script", "--new-volume-script", "--rsh-command":
				script(o.v)
			case "--checkpoint-action":
				if cmd, ok := strings.CutPrefix(o.v, "exec="); ok {
					script(cmd)
				}
			}
		}
	case name == "rsync":
		for _, v := range env("RSYNC_RSH") {
			fed(v)
		}
		vals, _ := rsyncOptions.values(words)
		for _, o := range vals {
			if o.opt == "-e" || o.opt == "--rsh" {
				fed(o.v)
			}
		}
	case name == "ssh" || name == "scp" || name == "sftp":
		if sshRuns(name, words, fed) {
			opaque = true
		}
	case name == "split":
		vals, _ := splitOptions.values(words)
		for _, o := range vals {
			if o.opt == "--filter" {
				fed(o.v) // run by the shell, each piece its input
			}
		}
	case name == "sort":
		vals, _ := sortOptions.values(words)
		for _, o := range vals {
			if o.opt == "--compress-program" {
				fed(o.v) // given the data to compress
			}
		}
	case name == "rg":
		if len(env("RIPGREP_CONFIG_PATH")) > 0 {
			opaque = true // its options from a file
		}
		vals, _ := rgOptions.values(words)
		for _, o := range vals {
			if o.opt == "--pre" || o.opt == "--hostname-bin" {
				fed(o.v)
			}
		}
	case name == "make" || name == "gmake":
		for _, f := range append(env("MAKEFLAGS"), env("MFLAGS")...) {
			words = append(strings.Fields(f), words...)
		}
		vals, operands := makeOptions.values(words)
		for _, o := range vals {
			if o.opt == "-E" || o.opt == "--eval" {
				opaque = true // makefile text: rules and recipes
			}
		}
		for _, a := range operands {
			if m := makeShellRE.FindString(a); m != "" {
				script(a[len(m):])
			}
		}
	case slices.Contains(awks, name):
		programs, fromFile := awkPrograms(words)
		opaque = fromFile || slices.ContainsFunc(programs, awkRuns)
	case slices.Contains(seds, name):
		script, fromFile := sedScript(words)
		opaque = fromFile || sedRuns(script)
	case name == "sqlite3":
		opaque = sqliteRuns(c)
	case name == "cmake" && len(words) > 1 && words[0] == "-E":
		add(cmakeCommandRuns(words[1:]))
	case name == "zip":
		for i, w := range words {
			if v, ok := strings.CutPrefix(w, "--unzip-command="); ok {
				fed(v)
			} else if (w == "-TT" || w == "--unzip-command") && i+1 < len(words) {
				fed(words[i+1]) // run by the shell, given the archive's name
			}
		}
	default:
		return false, false
	}
	return opaque, true
}

// cmakeCommandRuns is the command cmake -E env, time or chdir (words:
// the -E command and its arguments) runs: after env's --unset=NAME,
// --modify OP and NAME=VALUE words (or a "--"), after time's name, after
// chdir's directory. Other -E commands run none.
func cmakeCommandRuns(words []string) []string {
	switch {
	case words[0] == "time":
		return words[1:]
	case words[0] == "chdir" && len(words) > 2:
		return words[2:]
	case words[0] == "env":
		for i := 1; i < len(words); i++ {
			switch w := words[i]; {
			case w == "--":
				return words[i+1:]
			case w == "--modify":
				i++
			case !strings.HasPrefix(w, "--") && !strings.Contains(w, "="):
				return words[i:]
			}
		}
	}
	return nil
}

// awkPrograms are the programs an awk command runs, given its words
// after its name: those of -e (--source), or else its first operand;
// fromFile when it also runs one from a file, or an extension (-f, -i,
// -l, -E, -W and the like), which cannot be read here.
func awkPrograms(words []string) (programs []string, fromFile bool) {
	vals, operands := awkOptions.values(words)
	for _, o := range vals {
		switch o.opt {
		case "-e", "--source":
			programs = append(programs, o.v)
		case "-v", "--assign", "-F", "--field-separator":
		default:
			fromFile = true
		}
	}
	if len(programs) == 0 && len(operands) > 0 && !fromFile {
		programs = operands[:1]
	}
	return programs, fromFile
}

// sedScript is the script a sed command runs, given its words after
// its name: those of -e (--expression), one a line, or else its first
// operand; fromFile when one comes from a file (-f, --file), which
// cannot be read here.
func sedScript(words []string) (script string, fromFile bool) {
	vals, operands := sedOptions.values(words)
	var scripts []string
	for _, o := range vals {
		switch o.opt {
		case "-e", "--expression":
			scripts = append(scripts, o.v)
		case "-f", "--file":
			fromFile = true
		}
	}
	if len(scripts) == 0 && len(operands) > 0 {
		scripts = operands[:1]
	}
	return strings.Join(scripts, "\n"), fromFile
}

// awkKeywords are the words after which "/" begins a regular expression,
// not a division.
var awkKeywords = []string{"print", "printf", "return", "in", "case", "if", "while", "for", "do", "else"}

// awkTokens are the tokens of an awk program, as awkRuns and awkWrites
// read them: words (gawk's @load and @include among them), numbers,
// strings and regular expressions whole with their quotes or slashes (one
// not closed runs to the end), newlines, "||", ">>" and ">=", and any
// other character alone; blanks, a "\" before a newline and comments are
// skipped. A "/" after an operand (a word but a keyword, a number, a
// string, a regular expression, ")" or "]") divides; elsewhere it begins
// a regular expression, in which a "/" inside a bracket expression is no
// end ("[/]", "[]/]", "[^]/]", "[[:alpha:]/]", as awk reads them).
func awkTokens(prog string) []string {
	word := func(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	digit := func(c byte) bool { return c >= '0' && c <= '9' || c == '.' }
	var toks []string
	operand := false // the last token ends an operand: "/" divides
	for i := 0; i < len(prog); {
		c, j := prog[i], i+1
		ends := c == ')' || c == ']'
		switch {
		case c == ' ' || c == '\t':
			i++
			continue
		case c == '\\' && j < len(prog) && prog[j] == '\n':
			i += 2
			continue
		case c == '#':
			for j < len(prog) && prog[j] != '\n' {
				j++
			}
			i = j
			continue
		case c == '"' || c == '/' && !operand:
			bracket := false
			for ; j < len(prog) && (prog[j] != c || bracket); j++ {
				switch {
				case prog[j] == '\\':
					j++
				case c == '/' && prog[j] == '[' && !bracket:
					bracket = true
					if strings.HasPrefix(prog[j+1:], "^") {
						j++
					}
					if strings.HasPrefix(prog[j+1:], "]") {
						j++ // a "]" first is itself
					}
				case bracket && strings.HasPrefix(prog[j:], "[:"):
					if end := strings.Index(prog[j+2:], ":]"); end >= 0 {
						j += 2 + end + 1 // a class, [:alpha:]
					}
				case prog[j] == ']':
					bracket = false
				}
			}
			j = min(j+1, len(prog))
			ends = true
		case word(c) || c == '@' && j < len(prog) && word(prog[j]):
			for j < len(prog) && (word(prog[j]) || prog[j] >= '0' && prog[j] <= '9') {
				j++
			}
			ends = !slices.Contains(awkKeywords, prog[i:j])
		case digit(c):
			for j < len(prog) && digit(prog[j]) {
				j++
			}
			ends = true
		case slices.Contains([]string{"||", ">>", ">="}, prog[i:min(i+2, len(prog))]):
			j++
		}
		toks = append(toks, prog[i:j])
		operand = ends
		i = j
	}
	return toks
}

// awkRuns reports whether an awk program runs a command: it calls
// system() or pipes to or from one (print | "cmd", "cmd" | getline,
// gawk's |&), or runs code it does not hold (gawk's @load of an
// extension, @include of a file). Strings, regular expressions and
// comments are skipped (awkTokens).
func awkRuns(prog string) bool {
	toks := awkTokens(prog)
	for k, t := range toks {
		switch {
		case t == "|", strings.HasPrefix(t, "@load"), strings.HasPrefix(t, "@include"):
			return true
		case t == "system" && k+1 < len(toks) && toks[k+1] == "(":
			return true
		}
	}
	return false
}

// sedRuns reports whether a sed script runs a command (GNU sed's e
// command, the e flag of s), or cannot be read (sed refuses it).
func sedRuns(sc string) bool {
	runs, _ := sedRead(sc)
	return runs
}

// sedWrites are the files a sed script writes: those of its w and W
// commands and of s///w, each to the end of its line.
func sedWrites(sc string) []string {
	_, files := sedRead(sc)
	return files
}

// sedRead reads a sed script for sedRuns and sedWrites; the files are
// those read up to where it cannot be read or runs a command.
func sedRead(sc string) (runs bool, files []string) {
	cmds, ok := sedCommands(sc)
	for _, c := range cmds {
		switch {
		case c.name == 'e' || c.name == 's' && strings.Contains(c.flags, "e"):
			return true, files
		case c.file != "" && (c.name == 'w' || c.name == 'W' || c.name == 's'):
			files = append(files, c.file)
		}
	}
	return !ok, files
}

// sedCommand is a command of a sed script: its name ('s', 'w', 'a', …,
// '{' and '}' for a block's ends, '#' for a comment), the flags of s
// (w last), and the file of w, W, r, R and s///w.
type sedCommand struct {
	name        byte
	flags, file string
}

// sedCommands are the commands of a sed script, as GNU sed reads them,
// and whether it could be read to its end: not when sed refuses it or
// it is written in a way not read here; the commands are those read up
// to there.
func sedCommands(sc string) (cmds []sedCommand, ok bool) {
	i, n := 0, len(sc)
	skip := func(set string) {
		for i < n && strings.IndexByte(set, sc[i]) >= 0 {
			i++
		}
	}
	upTo := func(set string) {
		for i < n && strings.IndexByte(set, sc[i]) < 0 {
			i++
		}
	}
	// file reads a file's name, after blanks, to the end of the line.
	file := func() string {
		skip(" \t")
		start := i
		upTo("\n")
		return sc[start:i]
	}
	// delimited reads past the next unescaped delim, and in a regular
	// expression (re) past a bracket expression whole.
	delimited := func(delim byte, re bool) bool {
		for ; i < n; i++ {
			switch {
			case sc[i] == '\\':
				i++
			case sc[i] == '\n':
				return false
			case sc[i] == delim:
				i++
				return true
			case re && sc[i] == '[':
				if i = sedBracketEnd(sc, i); i < 0 {
					return false
				}
			}
		}
		return false
	}
	address := func() bool {
		switch {
		case i < n && sc[i] == '$':
			i++
		case i < n && sc[i] >= '0' && sc[i] <= '9':
			skip("0123456789~")
		case i < n && (sc[i] == '/' || sc[i] == '\\'):
			if sc[i] == '\\' {
				i++
			}
			if i >= n {
				return false
			}
			i++
			if !delimited(sc[i-1], true) {
				return false
			}
			skip("IM")
		}
		return true
	}
	for {
		for ; i < n && strings.IndexByte(" \t\n;}", sc[i]) >= 0; i++ {
			if sc[i] == '}' {
				cmds = append(cmds, sedCommand{name: '}'})
			}
		}
		if i >= n {
			return cmds, true
		}
		if sc[i] == '#' {
			cmds = append(cmds, sedCommand{name: '#'})
			upTo("\n")
			continue
		}
		if !address() {
			return cmds, false
		}
		skip(" \t")
		if i < n && sc[i] == ',' {
			i++
			skip(" \t")
			if i < n && (sc[i] == '+' || sc[i] == '~') {
				i++
				skip("0123456789")
			} else if !address() {
				return cmds, false
			}
		}
		skip(" \t!")
		if i >= n {
			return cmds, false
		}
		c := sedCommand{name: sc[i]}
		i++
		switch c.name {
		case '{':
			cmds = append(cmds, c)
			continue // a block: its commands follow
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'e':
			upTo("\n") // a command to run
		case 's', 'y':
			if i >= n || sc[i] == '\\' || sc[i] == '\n' {
				return cmds, false
			}
			delim := sc[i]
			i++
			if !delimited(delim, c.name == 's') || !delimited(delim, false) {
				return cmds, false
			}
			if c.name == 's' {
				start := i
				skip("gpiImMe0123456789")
				c.flags = sc[start:i]
				if i < n && sc[i] == 'w' {
					i++
					c.flags += "w"
					c.file = file()
				}
			}
		case 'a', 'i', 'c':
			// Text to write, to the end of the line ("\" before a newline
			// goes on).
			for ; i < n && sc[i] != '\n'; i++ {
				if sc[i] == '\\' {
					i++
				}
			}
		case 'w', 'W', 'r', 'R':
			c.file = file()
		case 'b', 't', 'T', ':', 'v':
			upTo(";\n") // a label
		case 'q', 'Q', 'l', 'L':
			skip(" \t")
			skip("0123456789")
		default:
			return cmds, false
		}
		cmds = append(cmds, c)
		skip(" \t")
		if i < n && strings.IndexByte("\n;}#", sc[i]) < 0 {
			return cmds, false
		}
	}
}

// sedBracketEnd is the index of the "]" that closes the bracket
// expression sc[i] opens in a regular expression of a sed script, or -1
// when none does on its line. GNU sed reads it whole: the delimiter and
// "\" in it are characters as any other ("s/[/]/x/" replaces a "/"),
// and so is a "]" first in it ("[]/]", "[^]/]"); "[:", "[." and "[="
// open a class that ends at ":]", ".]" and "=]" ("[[:alpha:]/]").
func sedBracketEnd(sc string, i int) int {
	i++
	if i < len(sc) && sc[i] == '^' {
		i++
	}
	if i < len(sc) && sc[i] == ']' {
		i++
	}
	for ; i < len(sc) && sc[i] != '\n'; i++ {
		switch {
		case sc[i] == ']':
			return i
		case sc[i] == '[' && i+1 < len(sc) && strings.IndexByte(":.=", sc[i+1]) >= 0:
			end := strings.Index(sc[i+2:], sc[i+1:i+2]+"]")
			if end < 0 || strings.Contains(sc[i+2:i+2+end], "\n") {
				return -1
			}
			i += 2 + end + 1
		}
	}
	return -1
}

// gitRunner is how a git subcommand's options are read (opts) and
// which of them take a command it runs (by the shell) as their value:
// runs, the short ones, and every long one of opts.
type gitRunner struct {
	opts optSpec
	runs string
}

// gitRunners are the git subcommands with options whose value is a
// command git runs: git rebase --exec (-x), filter-branch's filters and
// --setup, difftool --extcmd (-x), grep --open-files-in-pager (-O),
// send-email's --sendmail-cmd, --to-cmd, --cc-cmd and --header-cmd,
// and the programs a fetch or push starts for a repository on this
// machine (--upload-pack, -u, --receive-pack, --exec).
var gitRunners = map[string]gitRunner{
	"rebase":   {optSpec{short: "xsXC", optional: "S", long: []string{"--exec"}, abbrev: true}, "x"},
	"difftool": {optSpec{short: "xt", long: []string{"--extcmd"}, abbrev: true}, "x"},
	"grep":     {optSpec{short: "efmABC", optional: "O", long: []string{"--open-files-in-pager"}, abbrev: true}, "O"},
	"filter-branch": {optSpec{long: []string{"--setup", "--env-filter", "--tree-filter", "--index-filter", "--parent-filter",
		"--msg-filter", "--commit-filter", "--tag-name-filter"}}, ""},
	"send-email": {optSpec{long: []string{"--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd"}, flags: []string{"--to", "--cc"}, abbrev: true}, ""},
	"clone":      {optSpec{short: "uobc", long: []string{"--upload-pack"}, abbrev: true}, "u"},
	"fetch":      {optSpec{long: []string{"--upload-pack"}, abbrev: true}, ""},
	"pull":       {optSpec{long: []string{"--upload-pack"}, abbrev: true}, ""},
	"ls-remote":  {optSpec{long: []string{"--upload-pack"}, abbrev: true}, ""},
	"archive":    {optSpec{long: []string{"--exec"}, abbrev: true}, ""},
	"push":       {optSpec{long: []string{"--receive-pack", "--exec"}, abbrev: true}, ""},
	"send-pack":  {optSpec{long: []string{"--receive-pack", "--exec"}, abbrev: true}, ""},
}

// gitRuns reads the commands a git subcommand runs (words[0] is the
// subcommand): those of gitRunners, git submodule foreach's command (its
// words joined, as git gives them to the shell) and git bisect run's.
func gitRuns(words []string, add func([]string), script func(string)) {
	switch sub := words[0]; sub {
	case "submodule", "bisect":
		verb := map[string]string{"submodule": "foreach", "bisect": "run"}[sub]
		i := 1
		for i < len(words) && strings.HasPrefix(words[i], "-") {
			i++ // git submodule --quiet foreach
		}
		if i == len(words) || words[i] != verb {
			return
		}
		rest := words[i+1:]
		for sub == "submodule" && len(rest) > 0 && slices.Contains([]string{"--recursive", "-q", "--quiet", "--"}, rest[0]) {
			rest = rest[1:]
		}
		if sub == "submodule" {
			script(strings.Join(rest, " "))
		} else {
			add(slices.Clone(rest))
		}
	default:
		r, ok := gitRunners[sub]
		if !ok {
			return
		}
		vals, _ := r.opts.values(words[1:])
		for _, o := range vals {
			if strings.HasPrefix(o.opt, "--") || strings.Contains(r.runs, o.opt[1:]) {
				script(o.v)
			}
		}
	}
}
