package permission

import (
	"slices"
	"strings"
)

// buildWrites are the files and directories a build tool (name) writes
// that its arguments name: zipWrites, cmakeWrites, protocWrites,
// tscWrites, javacWrites, pip's --target, --prefix, --root, --src,
// download's -d, wheel's -w, --log and --report, install --user's
// site (~/.local), and cargo's
// --target-dir (or --config build.target-dir=), install --root and the
// directory cargo new and cargo init make a project in.
func buildWrites(name string, args []string) []string {
	var out []string
	named := func(opts ...string) func(opt, v string) {
		return func(opt, v string) {
			if slices.Contains(opts, opt) {
				out = append(out, v)
			}
		}
	}
	switch name {
	case "zip":
		return zipWrites(args)
	case "cmake":
		return cmakeWrites(args)
	case "protoc":
		return protocWrites(args)
	case "tsc":
		return tscWrites(args)
	case "javac":
		return javacWrites(args)
	case "pip", "pip3":
		written := named("-t", "--target", "--prefix", "--root", "--src", "-d", "--dest",
			"-w", "--wheel-dir", "--log", "--log-file", "--local-log", "--report")
		user := false
		operands := getopt(args, "tdwcer", pipLong, func(opt, v string) {
			written(opt, v)
			user = user || opt == "--user"
		})
		if user && len(operands) > 0 && operands[0] == "install" {
			out = append(out, "~/.local") // the user's site (or PYTHONUSERBASE's), and its bin
		}
	case "cargo":
		operands := getopt(args, "pFjZC", cargoLong, func(opt, v string) {
			k, dir, set := strings.Cut(v, "=") // --config KEY=VALUE, VALUE a TOML string
			switch {
			case opt == "--target-dir" || opt == "--root":
				out = append(out, v)
			case opt == "--config" && set && strings.TrimSpace(k) == "build.target-dir":
				out = append(out, strings.Trim(strings.TrimSpace(dir), `"'`))
			}
		})
		if sub := cargoSubcommand(operands); sub == "new" || sub == "init" {
			// The project's directory, which it makes (init's, without
			// one, the current directory); --bin and --lib take no
			// value here.
			operands = getopt(args, "ZC", []string{"name=", "vcs=", "edition=", "registry=", "config=", "color="}, nil)
			operands = slices.DeleteFunc(operands, func(w string) bool { return strings.HasPrefix(w, "+") })
			if len(operands) > 1 {
				out = append(out, operands[1:]...)
			} else {
				out = append(out, ".")
			}
		}
	}
	return out
}

// The long options (for getopt) of pip and cargo: those that take a
// value, and the flags an abbreviation of one could be taken for.
var (
	pipLong = []string{"target=", "prefix=", "root=", "src=", "dest=", "wheel-dir=", "requirement=",
		"constraint=", "editable=", "index-url=", "extra-index-url=", "find-links=", "python=", "platform=",
		"python-version=", "implementation=", "abi=", "upgrade-strategy=", "log=", "log-file=", "local-log=",
		"cache-dir=", "proxy=", "trusted-host=", "cert=", "client-cert=", "progress-bar=", "root-user-action=",
		"report=", "config-settings=", "global-option=", "no-binary=", "only-binary=", "exists-action=",
		"timeout=", "retries=", "user", "upgrade", "pre", "progress", "prefer-binary"}
	cargoLong = []string{"target-dir=", "root=", "package=", "features=", "jobs=", "target=", "manifest-path=",
		"profile=", "bin=", "example=", "test=", "bench=", "lib", "config=", "color=", "message-format=",
		"exclude=", "timings", "version=", "git=", "branch=", "tag=", "rev=", "path=", "registry=", "index="}
)

// cargoSubcommand is cargo's subcommand, given the operands getopt
// reads in its arguments: the first, past a toolchain (+nightly).
func cargoSubcommand(operands []string) string {
	for _, w := range operands {
		if !strings.HasPrefix(w, "+") {
			return w
		}
	}
	return ""
}

// zipWrites are the files zip writes, given its arguments: its archive
// (the first operand; -O's file when given), log (-lf) and the
// directory of its temporary archive (-b, --temp-path; a short option's
// value also glued, a long one's after "=" and its name abbreviated,
// as zip takes them), and the files
// it adds with -m (--move), which it removes. -x and -i take the
// words up to the next option.
func zipWrites(args []string) []string {
	var out, operands []string
	move := false
	valued := []string{"-n", "--suffixes", "-t", "--from-date", "-tt", "--before-date",
		"-P", "--password", "-Z", "--compression-method", "-s", "--split-size", "-ds", "--dot-size", "-TT",
		"--unzip-command"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case a == "-O" || a == "-lf" || a == "-b" || strings.HasPrefix(a, "--") && zipWritten(a):
			_, v, glued := strings.Cut(a, "=")
			if !glued && i+1 < len(args) {
				i++
				v = args[i]
			}
			out = append(out, v)
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && zipGlued(a) > 0:
			k := zipGlued(a) // -bDIR, -rbDIR, -OFILE
			move = move || strings.Contains(a[1:k], "m")
			v := a[k+1:]
			if v == "" && i+1 < len(args) {
				i++
				v = args[i]
			}
			out = append(out, v)
		case slices.Contains(valued, a):
			i++
		case a == "-x" || a == "-i" || a == "--exclude" || a == "--include":
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
		case a == "--move":
			move = true
		case strings.HasPrefix(a, "--") || a == "-" || a == "-@":
			if a == "-" {
				operands = append(operands, a)
			}
		case strings.HasPrefix(a, "-"):
			move = move || strings.Contains(a[1:], "m")
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) > 0 {
		out = append(out, operands[0])
		if move {
			out = append(out, operands[1:]...)
		}
	}
	return out
}

// zipWritten reports a long option of zip's (--NAME or --NAME=VALUE)
// whose value is a file written: --output-file, --logfile-path and
// --temp-path, or an abbreviation of one, which zip takes.
func zipWritten(a string) bool {
	name, _, _ := strings.Cut(a, "=")
	return len(name) > 3 && slices.ContainsFunc([]string{"--output-file", "--logfile-path", "--temp-path"},
		func(o string) bool { return strings.HasPrefix(o, name) })
}

// zipGlued is where -b or -O stands in a word of zip's short options,
// before its value (the rest of the word, or the next word): -bDIR,
// -rbDIR; 0 for none (in -db and -sb, b is part of the option).
func zipGlued(a string) int {
	for k := 1; k < len(a); k++ {
		if a[k] == 'O' || a[k] == 'b' && a[k-1] != 'd' && a[k-1] != 's' {
			return k
		}
	}
	return 0
}

// cmakeWrites are the directories cmake writes, given its arguments: the
// build directory it configures (-B DIR, or the current directory given
// a source operand or -S) or builds (--build DIR), and the install
// prefix (--install-prefix, -DCMAKE_INSTALL_PREFIX= or -D
// CMAKE_INSTALL_PREFIX=, --install's --prefix).
func cmakeWrites(args []string) []string {
	var out []string
	build, configure := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "-E":
			return cmakeCommandWrites(args[i+1:])
		case a == "-P" || a == "--":
			return out // a script, not a build
		case a == "-B" || a == "--build" || a == "--install-prefix" || a == "--prefix":
			build = true
			out = append(out, next())
		case strings.HasPrefix(a, "-B"):
			build = true
			out = append(out, a[2:])
		case strings.HasPrefix(a, "--install-prefix=") || strings.HasPrefix(a, "--prefix="):
			_, v, _ := strings.Cut(a, "=")
			out = append(out, v)
		case strings.HasPrefix(a, "-DCMAKE_INSTALL_PREFIX=") || strings.HasPrefix(a, "-DCMAKE_INSTALL_PREFIX:"):
			_, v, _ := strings.Cut(a, "=")
			out = append(out, v)
		case a == "-D":
			// -D VAR=VALUE, as -DVAR=VALUE.
			if d := next(); strings.HasPrefix(d, "CMAKE_INSTALL_PREFIX=") || strings.HasPrefix(d, "CMAKE_INSTALL_PREFIX:") {
				_, v, _ := strings.Cut(d, "=")
				out = append(out, v)
			}
		case a == "--install":
			build = true
			next()
		case a == "-S":
			configure = true
			next()
		case slices.Contains([]string{"-C", "-G", "-T", "-A", "-U", "--preset", "--target", "-t", "--config",
			"--component", "-j", "--parallel"}, a):
			next()
		case !strings.HasPrefix(a, "-"):
			configure = true
		}
	}
	if configure && !build {
		out = append(out, ".")
	}
	return out
}

// cmakeCommandWrites are the files a command of cmake -E (words: the
// command and its arguments) writes or removes: those of rm, remove,
// remove_directory, make_directory, touch and touch_nocreate, both of
// rename and create_hardlink (as ln's), the destination of the copy
// commands (the last operand, or -t's) and create_symlink, and the
// archive tar creates.
func cmakeCommandWrites(words []string) []string {
	if len(words) == 0 {
		return nil
	}
	var operands []string
	dest := ""
	for i := 1; i < len(words); i++ {
		switch a := words[i]; {
		case a == "--":
			operands = append(operands, words[i+1:]...)
			i = len(words)
		case a == "-t" && strings.HasPrefix(words[0], "copy") && i+1 < len(words):
			i++
			dest = words[i]
		case !strings.HasPrefix(a, "-"):
			operands = append(operands, a)
		}
	}
	switch words[0] {
	case "rm", "remove", "remove_directory", "make_directory", "touch", "touch_nocreate", "rename", "create_hardlink":
		return operands
	case "copy", "copy_if_different", "copy_if_newer", "copy_directory", "copy_directory_if_different",
		"copy_directory_if_newer", "create_symlink":
		if dest != "" {
			return []string{dest}
		}
		if len(operands) > 0 {
			return operands[len(operands)-1:]
		}
	case "tar":
		if len(words) > 2 && strings.Contains(strings.TrimPrefix(words[1], "-"), "c") {
			return words[2:3]
		}
	}
	return nil
}

// protocWrites are the directories and files protoc writes, given its
// arguments: those of its --LANG_out options (after the parameters
// before a ":"), -o (--descriptor_set_out) and --dependency_out.
func protocWrites(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, v, attached := strings.Cut(a, "=")
		switch {
		case strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--"):
			v, attached = a[2:], a != "-o"
		case strings.HasPrefix(name, "--") && strings.HasSuffix(name, "_out"):
		default:
			continue
		}
		if !attached && i+1 < len(args) {
			i++
			v = args[i]
		}
		if k := strings.LastIndex(v, ":"); k >= 0 {
			v = v[k+1:]
		}
		out = append(out, v)
	}
	return out
}

// tscWrites are the files and directories tsc writes, given its
// arguments (options named in any case, as tsc reads them): --outDir,
// --outFile (--out), --declarationDir, --tsBuildInfoFile, the project
// of -p (--project), --generateTrace's directory and
// --generateCpuProfile's file; with none of the first two and no
// --noEmit, the sources it is given, beside which it writes each .js.
func tscWrites(args []string) []string {
	var out, sources []string
	dirs, emit := false, true
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, v, attached := strings.Cut(strings.ToLower(a), "=")
		if attached {
			_, v, _ = strings.Cut(a, "=")
		}
		value := func() {
			if !attached && i+1 < len(args) {
				i++
				v = args[i]
			}
		}
		switch name {
		case "--outdir", "--outfile", "--out":
			dirs = true
			value()
			out = append(out, v)
		case "--declarationdir", "--tsbuildinfofile", "-p", "--project", "--generatetrace", "--generatecpuprofile":
			value()
			out = append(out, v)
		case "--noemit":
			emit = false
		default:
			if !strings.HasPrefix(a, "-") {
				sources = append(sources, a)
			}
		}
	}
	if emit && !dirs {
		out = append(out, sources...)
	}
	return out
}

// javacValued are javac's options that take a value.
var javacValued = []string{"-cp", "-classpath", "--class-path", "-sourcepath", "--source-path", "-source",
	"--source", "-target", "--target", "--release", "-encoding", "-processorpath", "--processor-path",
	"-processor", "-bootclasspath", "--boot-class-path", "-p", "--module-path", "-m", "--module",
	"--module-source-path", "--upgrade-module-path", "--system", "--add-modules", "--limit-modules",
	"--add-exports", "--add-reads", "--patch-module", "-extdirs", "-endorseddirs", "--processor-module-path"}

// javacWrites are the directories javac writes, given its arguments: -d
// (classes), -s (generated sources) and -h (headers), and -Xstdout's
// file; without -d, the
// sources it is given, beside which it writes each .class.
func javacWrites(args []string) []string {
	var out, sources []string
	classes := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-d" || a == "-s" || a == "-h" || a == "-Xstdout":
			classes = classes || a == "-d"
			if i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		case slices.Contains(javacValued, a):
			i++
		case !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "@"):
			sources = append(sources, a)
		}
	}
	if !classes {
		out = append(out, sources...)
	}
	return out
}
