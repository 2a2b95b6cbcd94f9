package permission

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// writtenPaths are the files a command writes that the line names: its
// output redirections, the files its arguments name for writing
// (argWrites) and the directories its environment does (envWrites), a
// relative one also under each directory a cd before it may have led
// to (inDirs).
func writtenPaths(c simpleCmd) []string {
	return inDirs(c, slices.Concat(c.outputs, argWrites(c), envWrites(c)))
}

// argWrites are the files (and directories written into) that a
// command's arguments name for writing, as the command reads its
// arguments: find's -fprint, -fprint0, -fprintf and -fls, and its
// starting points with -delete (findDeleted); sort -o; git's
// --output (log, diff, show, …), format-patch's -o and
// --output-directory (or the current directory) and archive's -o; tee's
// operands; the destination of cp, install and ln (-t DIR, or the last
// operand; every operand of install -d), and the files a hard link is
// made to (ln without -s, cp -l); every operand of mv, whose
// sources go too; dd's of=; curl's -o, --output-dir, -D, -c and the
// other files it writes, the files of --write-out's %output{FILE} (the
// current directory for -O); wget's -O, -o, -a, -P, --save-cookies and
// the other files it writes, also given as wgetrc commands (-e
// output_document=FILE), or the current directory; unknownFile for
// curl -K (--config) and wget --config, whose file may name any; go's -o,
// -coverprofile and the like (goWrites), a C compiler's -o
// (compilerWrites), the logs of strace, ltrace, time and script
// (tracerWrites); where tar and unzip extract
// and the archive tar creates (tarWrites, unzipWrites); the destination
// here of rsync and scp (rsyncWrites, scpWrites); where patch writes
// (patchWrites) and the prefix of split and csplit (splitWrites); the
// output files of uniq, xxd, iconv, tree and openssl, and those gofmt
// -w rewrites (outputFiles); those prettier --write, black, ruff check
// --fix, ruff format, isort and eslint --fix rewrite, and their
// reports (formatterWrites, ruffWrites); the archive zip writes (and
// with -m the files it removes), cmake's build directory and install
// prefix and the files of its -E commands, protoc's outputs, tsc's and javac's, pip's --target, --prefix
// and --root and install --user's site, cargo's --target-dir and the directory of cargo new and
// init (buildWrites); the
// files a sed script's w commands and an awk program's print > "FILE"
// write (programWrites); the files rm,
// touch, chmod, sed -i and the like change (fileChanges); and those of
// python -m pip, black, isort, ruff and gzip, as the command's
// (pythonWriters), and of python -m zipfile, tarfile and json.tool
// (pythonModuleWrites),
// and of uv pip, as pip's, with compile's -o and the site --system and
// --python change, past uv's global options, and uv's --cache-dir
// (uvWrites). "." stands for the
// current directory, "-" for the standard output, which is no file.
func argWrites(c simpleCmd) []string {
	if len(c.args) == 0 {
		return nil
	}
	args := c.args[1:]
	var out []string
	add := func(p string) {
		if p != "" && p != "-" {
			out = append(out, p)
		}
	}
	switch filepath.Base(c.args[0]) {
	case "find":
		out = append(out, findDeleted(args)...)
		for i := 0; i+1 < len(args); i++ {
			if slices.Contains([]string{"-fprint", "-fprint0", "-fprintf", "-fls"}, args[i]) {
				i++
				add(args[i])
			}
		}
	case "sort":
		getopt(args, "kSoTt", sortLong, func(opt, v string) {
			if opt == "-o" || opt == "--output" {
				add(v)
			}
		})
	case "tee":
		for _, o := range getopt(args, "", nil, nil) {
			add(o)
		}
	case "cp", "mv", "install", "ln":
		out = append(out, copyWrites(filepath.Base(c.args[0]), args)...)
	case "dd":
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				add(v)
			}
		}
	case "curl":
		getopt(args, "oDcwK", curlLong, func(opt, v string) {
			switch {
			case opt == "-O" || opt == "-J" || opt == "--remote-name" || opt == "--remote-name-all":
				add(".") // the file is named after the URL, or by the server
			case opt == "-K" || opt == "--config":
				add(unknownFile) // its options, outputs too, are in the file
			case slices.Contains(curlWrites, opt):
				add(v)
			case opt == "-w" || opt == "--write-out":
				for _, p := range writeOutFiles(v) {
					add(p)
				}
			}
		})
	case "wget":
		named := false // -O: not into the current directory
		getopt(args, "OoaPe", wgetLong, func(opt, v string) {
			switch opt {
			case "-O", "--output-document":
				named = true
				add(v)
			case "--config":
				add(unknownFile) // a wgetrc, which may name any file
			case "-o", "--output-file", "-a", "--append-output", "-P", "--directory-prefix",
				"--save-cookies", "--rejected-log", "--hsts-file", "--warc-file":
				add(v)
			case "-e", "--execute":
				key, p, ok := strings.Cut(v, "=")
				key = strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(strings.TrimSpace(key)))
				if ok && slices.Contains(wgetrcWrites, key) {
					named = named || key == "outputdocument"
					add(strings.TrimSpace(p))
				}
			}
		})
		if !named {
			add(".")
		}
	case "git":
		out = append(out, gitWrites(args)...)
	case "go":
		out = append(out, goWrites(args)...)
	case "strace", "ltrace", "time", "script":
		out = append(out, tracerWrites(filepath.Base(c.args[0]), args)...)
	case "tar", "gtar", "bsdtar":
		out = append(out, tarWrites(args)...)
	case "unzip":
		out = append(out, unzipWrites(args)...)
	case "rsync":
		out = append(out, rsyncWrites(args)...)
	case "scp":
		out = append(out, scpWrites(args)...)
	case "patch":
		out = append(out, patchWrites(args)...)
	case "split", "csplit":
		out = append(out, splitWrites(filepath.Base(c.args[0]), args)...)
	case "sed", "gsed":
		files, _ := fileChanges("sed", args)
		for _, f := range append(files, programWrites("sed", args)...) {
			add(f)
		}
	case "awk", "gawk", "mawk", "nawk":
		for _, f := range programWrites("awk", args) {
			add(f)
		}
	case "prettier", "black", "isort", "eslint":
		for _, f := range formatterWrites(filepath.Base(c.args[0]), args) {
			add(f)
		}
	case "zip", "cmake", "protoc", "tsc", "javac", "pip", "pip3", "cargo":
		for _, f := range buildWrites(filepath.Base(c.args[0]), args) {
			add(f)
		}
	case "ruff":
		for _, f := range ruffWrites(args) {
			add(f)
		}
	case "uniq", "xxd", "iconv", "tree", "gofmt", "goimports", "openssl":
		for _, f := range outputFiles(filepath.Base(c.args[0]), args) {
			add(f)
		}
	default:
		if slices.Contains(compilers, filepath.Base(c.args[0])) {
			return append(out, compilerWrites(args)...)
		}
		if mod, rest, ok := pythonModule(args); ok && pythonRE.MatchString(filepath.Base(c.args[0])) {
			switch {
			case slices.Contains(pythonWriters, mod):
				return argWrites(simpleCmd{args: append([]string{mod}, rest...)})
			case mod == "zipfile" || mod == "tarfile" || mod == "json.tool":
				return pythonModuleWrites(mod, rest)
			}
		}
		switch filepath.Base(c.args[0]) {
		case "uv":
			return uvWrites(c.environ(), args)
		case "uvx":
			return uvWrites(c.environ(), append([]string{"tool", "run"}, args...)) // uv tool run
		}
		files, _ := fileChanges(filepath.Base(c.args[0]), args)
		for _, f := range files {
			add(f)
		}
	}
	return out
}

// uvWrites are the files uv writes that its arguments name, as it
// reads its global options (uvGlobals, with the variables set before it,
// assigns): --cache-dir's directory, UV_PROJECT_ENVIRONMENT's but for
// uvUserLevel's subcommands, and
// uv pip's files, as pip's, with uvPipWrites'; a relative one under
// --directory's directory, where uv runs. A configuration file
// (--config-file FILE, UV_CONFIG_FILE=FILE) may name any (pip's target,
// prefix and system, the cache directory): unknownFile, as for curl -K.
func uvWrites(assigns, args []string) []string {
	g := uvGlobals(assigns, args)
	out := g.caches
	if sub := g.subcommand(args); !slices.Contains(uvUserLevel, sub) {
		out = append(out, g.envs...)
	}
	if g.sub >= 0 && args[g.sub] == "pip" {
		out = append(out, argWrites(simpleCmd{args: args[g.sub:]})...) // uv's pip interface
		out = append(out, uvPipWrites(args[g.sub+1:])...)
	}
	if g.sub >= 0 && args[g.sub] == "venv" {
		out = append(out, uvVenvWrites(args[g.sub+1:])...)
	}
	for i, p := range out {
		out[i] = underDir(g.dir, p)
	}
	if g.config {
		out = append(out, unknownFile)
	}
	return out
}

// uvValued are uv's global options that take a value (uv --help: the
// cache, global and Python options); the others (-q, -v, -n,
// --offline, --no-cache, …) are flags. uv takes no abbreviation.
var uvValued = []string{"--directory", "--project", "--cache-dir", "--config-file", "--color", "--allow-insecure-host",
	"--trusted-host", "--python-preference", "--python-fetch", "--preview-features", "--preview-feature"}

// uvOptions is what uv's global options say, as uvGlobals reads them.
type uvOptions struct {
	sub      int      // the subcommand's index in uv's words, -1 for none
	dir      string   // --directory's: uv runs there, relative paths under it
	projects []string // --directory's and --project's, where uv finds its project
	caches   []string // --cache-dir's, which uv writes
	envs     []string // UV_PROJECT_ENVIRONMENT's, the project's environment it makes and changes
	froms    []string // uv tool run's --from, the package it runs the command of, and uv run's and its --with and --with-editable, packages it installs
	config   bool     // a configuration file named (--config-file)
}

// uvEnvOptions are the variables uv reads as its global options, which
// those on the line override (uv --help: [env: …]).
var uvEnvOptions = map[string]string{"UV_WORKING_DIR": "--directory", "UV_PROJECT": "--project",
	"UV_CACHE_DIR": "--cache-dir", "UV_CONFIG_FILE": "--config-file"}

// subcommand is the subcommand of uv's words as g reads them, "" for
// none.
func (g uvOptions) subcommand(words []string) string {
	if g.sub < 0 {
		return ""
	}
	return words[g.sub]
}

// uvGlobals reads uv's words after its name as uv reads its global
// options, which may stand before its subcommand or after it (uv
// --directory DIR sync, uv sync --directory DIR), up to "--", and for
// uv run and uv tool run up to the command they run, whose words are its
// own (their options' values read as runPackage reads them); and the
// variables among assigns, those set before uv, that stand for its
// options (uvEnvOptions) and UV_PROJECT_ENVIRONMENT. An empty one uv
// takes as unset.
func uvGlobals(assigns, words []string) (g uvOptions) {
	g.sub = -1
	defer func() { // --project's under --directory's, wherever it stands
		for i, p := range g.projects {
			g.projects[i] = underDir(g.dir, p)
		}
		if g.dir != "" {
			g.projects = append(g.projects, g.dir)
		}
	}()
	set := func(opt, v string) {
		switch opt {
		case "--directory":
			g.dir = v // the last one given
		case "--project":
			g.projects = append(g.projects, v)
		case "--cache-dir":
			g.caches = append(g.caches, v)
		case "--from":
			g.froms = append(g.froms, v)
		case "--with", "--with-editable":
			g.froms = append(g.froms, strings.Split(v, ",")...)
		case "--config-file":
			g.config = true
		}
	}
	for _, a := range assigns {
		switch k, v, _ := strings.Cut(a, "="); {
		case v == "":
		case k == "UV_PROJECT_ENVIRONMENT":
			g.envs = append(g.envs, v)
		case uvEnvOptions[k] != "":
			set(uvEnvOptions[k], v)
		}
	}
	runs := false
	for i := 0; i < len(words); i++ {
		a := words[i]
		opt, v, has := strings.Cut(a, "=")
		switch {
		case a == "--":
			return g
		case strings.HasPrefix(a, "-") && a != "-":
			valued := slices.Contains(uvValued, opt)
			if !valued && (!runs || !slices.Contains(uvxRunner.valued, opt)) {
				continue
			}
			if !has {
				if i+1 == len(words) {
					return g
				}
				i++
				v = words[i]
			}
			set(opt, v)
		case g.sub < 0:
			g.sub = i
			runs = a == "run" || a == "tool" && i+1 < len(words) && words[i+1] == "run"
			if a == "tool" && runs {
				i++
			}
		case runs:
			return g // the command uv run runs
		}
	}
	return g
}

// uvVenvWrites is the directory uv venv makes: its operand, .venv
// without one. A value of an option not read here stands as an operand,
// so more is taken as written than is.
func uvVenvWrites(args []string) []string {
	long := []string{"python=", "prompt=", "index=", "default-index=", "index-url=", "extra-index-url=", "find-links=",
		"index-strategy=", "keyring-provider=", "exclude-newer=", "link-mode=", "seed", "allow-existing", "clear",
		"system-site-packages", "relocatable", "no-project", "no-index", "offline", "quiet", "verbose"}
	for _, o := range uvValued {
		long = append(long, strings.TrimPrefix(o, "--")+"=")
	}
	operands := getopt(args, "pif", long, nil)
	if len(operands) == 0 {
		return []string{".venv"}
	}
	return operands
}

// uvPipWrites are the files uv pip writes that pip does not: compile's
// -o (--output-file), and the site of the interpreter install, sync and
// uninstall change when it is not the virtual environment's: the
// system's (--system), or the one --python (-p) names, a path (.venv,
// /srv/venv/bin/python), or finds (3.12, python3), which may be the
// system's too: a directory not known here.
func uvPipWrites(args []string) []string {
	var output, site []string
	operands := getopt(args, "ocrpifPCet", []string{"output-file=", "python=", "system"}, func(opt, v string) {
		switch {
		case opt == "-o" || opt == "--output-file":
			output = append(output, v)
		case opt == "--system":
			site = append(site, unknownFile)
		case (opt == "-p" || opt == "--python") && (strings.Contains(v, "/") || strings.HasPrefix(v, ".")):
			site = append(site, v) // .venv, .venv/bin/python
		case opt == "-p" || opt == "--python":
			site = append(site, unknownFile)
		}
	})
	switch {
	case len(operands) == 0:
		return nil
	case operands[0] == "compile":
		return output
	case slices.Contains([]string{"install", "sync", "uninstall"}, operands[0]):
		return site
	}
	return nil
}

// pythonWriters are the modules python -m runs (pythonModule) that are
// the commands of the same name, whose files written argWrites reads
// (python -m gzip FILE writes FILE.gz, as gzip does).
var pythonWriters = []string{"pip", "black", "isort", "ruff", "gzip"}

// pythonModuleWrites are the files the command lines of Python's
// zipfile, tarfile and json.tool modules write, given their arguments:
// the archive -c (--create) makes, the directory -e (--extract)
// extracts into (its second value; tarfile's, without one, the
// current directory), json.tool's second operand; and for tarfile -e
// without --filter data or --filter tar, which refuse a member outside
// that directory, a file not known here (unknownFile), as for tar -P:
// a member's "/" and ".." are kept. zipfile drops them, as unzip does.
func pythonModuleWrites(mod string, args []string) []string {
	if mod == "json.tool" {
		operands := getopt(args, "", []string{"indent=", "sort-keys", "no-ensure-ascii", "json-lines", "tab",
			"no-indent", "compact"}, nil)
		if len(operands) > 1 {
			return operands[1:2]
		}
		return nil
	}
	var out []string
	extract := false
	filter := ""
	operands := getopt(args, "ce", []string{"create=", "extract=", "list=", "test=", "filter=",
		"metadata-encoding="}, func(opt, v string) {
		switch opt {
		case "-c", "--create":
			out = append(out, v)
		case "-e", "--extract":
			extract = true
		case "--filter":
			filter = v // the last one given
		}
	})
	switch {
	case extract && len(operands) > 0:
		out = append(out, operands[0])
	case extract && mod == "tarfile":
		out = append(out, ".") // zipfile requires one
	}
	if extract && mod == "tarfile" && filter != "data" && filter != "tar" {
		// Before Python 3.14, no filter is fully_trusted: members are
		// extracted under their names, "/" and ".." kept (tar -P).
		out = append(out, unknownFile)
	}
	return out
}

// unknownFile stands for a file written whose name is not on the line
// (awk's print > $1, an output a curl config file names): as a word the
// shell expands, it is outside the working directories.
const unknownFile = "$UNKNOWN_FILE"

// getopt reads args as GNU getopt_long does: clusters of short options
// (-uo FILE, -oFILE), whose letters in valued take a value (the rest of
// the word or the next word); long options, written whole or
// abbreviated, those in long ending with "=" taking a value ("=VALUE" or
// the next word); operands anywhere, and every word after "--". It calls
// each (if not nil) for every option, with "-X" or "--NAME" (NAME whole
// for one in long) and its value, and returns the operands ("-" is one).
//
// An abbreviation is taken as the first name in long it abbreviates, an
// exact name first: one a command would refuse as ambiguous reads as
// one it takes, so a word is more often taken as a file written than
// not.
func getopt(args []string, valued string, long []string, each func(opt, value string)) (operands []string) {
	call := func(opt, v string) {
		if each != nil {
			each(opt, v)
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(operands, args[i+1:]...)
		case strings.HasPrefix(a, "--"):
			name, v, attached := strings.Cut(a[2:], "=")
			full, hasValue := longOption(name, long)
			if hasValue && !attached && i+1 < len(args) {
				i++
				v = args[i]
			}
			call("--"+full, v)
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				letter := a[k]
				if !strings.ContainsRune(valued, rune(letter)) {
					call("-"+string(letter), "")
					continue
				}
				v := a[k+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				call("-"+string(letter), v)
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	return operands
}

// longOption is the option of long that --name is (name itself when
// none), as getopt reads it, and whether it takes a value.
func longOption(name string, long []string) (full string, hasValue bool) {
	name, _, _ = strings.Cut(name, "=")
	for _, l := range long {
		if strings.TrimSuffix(l, "=") == name {
			full = l
			break
		}
		if full == "" && strings.HasPrefix(l, name) {
			full = l
		}
	}
	full, hasValue = strings.CutSuffix(full, "=")
	return cmp.Or(full, name), hasValue
}

// The long options (for getopt) of the commands argWrites reads: those
// that take a value, and the flags an abbreviation of one of those could
// be taken for.
var (
	sortLong = []string{"batch-size=", "buffer-size=", "compress-program=", "field-separator=", "files0-from=",
		"key=", "output=", "parallel=", "random-source=", "sort=", "temporary-directory="}
	// curlWrites are curl's options whose value is a file it writes (or
	// a directory it writes into).
	curlWrites = []string{"-o", "-D", "-c", "--output", "--output-dir", "--dump-header", "--cookie-jar",
		"--trace", "--trace-ascii", "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"}
	curlLong = []string{"output=", "output-dir=", "dump-header=", "cookie-jar=", "trace=", "trace-ascii=",
		"stderr=", "libcurl=", "etag-save=", "hsts=", "alt-svc=", "remote-name", "remote-name-all", "write-out=",
		"config="}
	wgetLong = []string{"output-document=", "output-file=", "append-output=", "directory-prefix=", "execute=",
		"save-cookies=", "rejected-log=", "hsts", "hsts-file=", "warc-file=", "config="}
	// wgetrcWrites are the wgetrc commands (wget -e, written without "_"
	// and "-" as wget compares them) whose value is a file wget writes
	// (or a directory it writes into).
	wgetrcWrites = []string{"outputdocument", "logfile", "dirprefix", "savecookies", "rejectedlog", "hstsfile", "warcfile"}
	gitLong      = []string{"output=", "output-directory="}
)

// writeOutFiles are the files curl's --write-out format writes to:
// "%output{FILE}", "%output{>>FILE}".
func writeOutFiles(format string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(format, "%output{")
		if !ok {
			return out
		}
		name, after, _ := strings.Cut(rest, "}")
		out = append(out, strings.TrimPrefix(name, ">>"))
		format = after
	}
}

// copyLong are the long options (for getopt) of cp, mv, install and ln,
// and copyShort their short options that take a value.
var (
	copyLong = map[string][]string{
		"cp":      {"link", "no-preserve=", "sparse=", "suffix=", "symbolic-link", "target-directory="},
		"mv":      {"suffix=", "target-directory="},
		"install": {"directory", "group=", "mode=", "owner=", "strip", "strip-program=", "suffix=", "target-directory="},
		"ln":      {"suffix=", "symbolic", "target-directory="},
	}
	copyShort = map[string]string{"cp": "St", "mv": "St", "install": "gmoSt", "ln": "St"}
)

// copyWrites are the paths cp, mv, install or ln (name) writes, given
// its arguments: the directory of -t (--target-directory), or else the
// last operand; all operands for mv (its sources are removed) and for
// install -d (directories it makes); for ln with one operand, its base
// name in the current directory. The files a hard link is made to (ln
// without -s, cp -l) are written too: the link is another name of each,
// through which a later write changes it.
func copyWrites(name string, args []string) []string {
	var dirs []string
	dirsOnly := false // install -d
	hard, symbolic := name == "ln", false
	operands := getopt(args, copyShort[name], copyLong[name], func(opt, v string) {
		switch {
		case opt == "-t" || opt == "--target-directory":
			dirs = append(dirs, v)
		case name == "install" && (opt == "-d" || opt == "--directory"):
			dirsOnly = true
		case name == "cp" && (opt == "-l" || opt == "--link"):
			hard = true
		case opt == "-s" || opt == "--symbolic" || opt == "--symbolic-link":
			symbolic = true
		}
	})
	var linked []string // the files hard links are made to
	if hard && !symbolic {
		linked = operands
		if len(dirs) == 0 && len(operands) > 1 {
			linked = operands[:len(operands)-1]
		}
	}
	switch {
	case name == "mv" || dirsOnly:
		return append(dirs, operands...)
	case len(dirs) > 0:
		return append(dirs, linked...)
	case len(operands) == 1 && name == "ln":
		return append([]string{filepath.Base(operands[0])}, linked...)
	case len(operands) > 1:
		return append(operands[len(operands)-1:], linked...)
	}
	return nil
}

// gitWrites are the files git writes that its arguments name: the
// directories of -C, --work-tree and --git-dir (gitPlace) for a
// subcommand that is not read-only (git -C DIR commit); after git's own
// options (with -C DIR, relative to DIR), any subcommand's
// --output=FILE (git log, diff, show, …, archive), format-patch's -o DIR
// and --output-directory DIR (without, the current directory),
// archive's -o FILE, and what clone, init, worktree add and bundle
// create make (gitMakes).
func gitWrites(args []string) []string {
	dir := ""          // -C's, relative paths are under it
	var repos []string // the repositories and work trees git works on
	sub := -1
global:
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" && i+1 < len(args):
			i++
			dir = underDir(dir, args[i])
			repos = append(repos, dir)
		case (a == "--git-dir" || a == "--work-tree") && i+1 < len(args):
			i++
			repos = append(repos, gitPlace(dir, a, args[i]))
		case strings.HasPrefix(a, "--git-dir=") || strings.HasPrefix(a, "--work-tree="):
			opt, v, _ := strings.Cut(a, "=")
			repos = append(repos, gitPlace(dir, opt, v))
		case slices.Contains([]string{"-c", "--namespace", "--super-prefix", "--config-env", "--list-cmds"}, a):
			i++
		case !strings.HasPrefix(a, "-"):
			sub = i
			break global
		}
	}
	if sub < 0 {
		return nil
	}
	var out []string
	if !readOnlyCommands["git"](args[sub:]) {
		// git -C ../other reset --hard, git --work-tree=/srv checkout .:
		// a command that is not read-only writes there.
		out = append(out, repos...)
	}
	add := func(p string) {
		if p != "" && p != "-" {
			out = append(out, underDir(dir, p))
		}
	}
	name, rest := args[sub], args[sub+1:]
	short := ""
	if name == "format-patch" || name == "archive" {
		short = "o"
	}
	named := false
	getopt(rest, short, gitLong, func(opt, v string) {
		switch {
		case opt == "--output" || opt == "-o" || opt == "--output-directory":
			named = true
			add(v)
		}
	})
	if name == "format-patch" && !named {
		add(".")
	}
	for _, p := range gitMakes(name, rest) {
		add(p)
	}
	return out
}

// gitPlace is the directory git's option opt (--git-dir or
// --work-tree) with value v names, under dir (-C's): for --git-dir, the
// one that holds the repository, as -C names it (a repository's own
// .git is where git writes, no hook put there).
func gitPlace(dir, opt, v string) string {
	if opt == "--git-dir" && !shellExpands(v) {
		v = filepath.Dir(filepath.Clean(v))
	}
	return underDir(dir, v)
}

// underDir is p as a path relative to dir ("" for the current
// directory) would be: p when absolute or there is no dir, "DIR/p"
// otherwise (not cleaned: ".." after a symbolic link is the kernel's).
func underDir(dir, p string) string {
	if dir == "" || anchored(p) {
		return p
	}
	return strings.TrimSuffix(dir, "/") + "/" + p
}

// anchored reports a path that is the same under any directory:
// absolute, or under the home directory.
func anchored(p string) bool {
	return filepath.IsAbs(p) || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$HOME")
}

// The directories a command may run in (simpleCmd.dirs) follow the cd
// and pushd commands before it on the line. A cd may fail, or run in a
// subshell, a pipeline or a script another shell runs, so the directory
// before it is kept with the one it leads to, and a relative path is
// checked under each. Only a command joined by && to a literal cd
// before it (cd sub && make > ../log: cdTo) runs where that cd led
// alone, when the line's cds are the shell's own and stay where they
// lead (cdsHold). A directory this cannot know is a word the shell
// expands: "$HOME" (cd, cd ~: its paths are checked there too),
// "$OLDPWD" (cd -), "$DIRSTACK" (popd, pushd +N), the word itself ($X),
// "$PWD" (a pattern, a brace expansion, more than maxDirs, CDPATH set):
// a path under one is outside the working directories.

// maxDirs bounds the directories followed for one command.
const maxDirs = 16

// followDirs sets the dirs of each of cmds, in order, from dirs and the
// cd and pushd commands before it, and returns the dirs after them all.
// With deep, cmds are a line's commands, and the commands each runs
// (eval 'cd x', { cd x; }) are looked at too; otherwise cmds are those
// already (what wrapped finds). With ands (cdsHold), the links of cmds
// are the shell's: a command joined by && runs only where the shell may
// be when the commands before succeeded, which is only where a literal
// cd right before led; one joined by | where the command before began
// (with its cds' directories, as before: a pipeline's commands run in
// subshells); any other anywhere the shell may be (|| too: where the
// commands before failed, or its cd did).
func followDirs(cmds []simpleCmd, dirs []string, deep, ands, exits bool) []string {
	cdpath := os.Getenv("CDPATH") != ""
	if len(dirs) == 0 {
		dirs = []string{""}
	}
	// all: where the shell may be, whatever ran; ok: where it may be when
	// the last pipeline succeeded; ever: where any command may have run.
	all, ok, ever := dirs, dirs, dirs
	errexit := false // set -e is on
	for i := range cmds {
		okBefore := ok
		here := all
		if ands && (cmds[i].link == "&&" || cmds[i].link == "|") {
			// a | b: b starts where a did, which ok holds (a is taken
			// as succeeded only as a literal cd before &&).
			here = ok
		}
		cmds[i].dirs = here
		seen := []simpleCmd{cmds[i]}
		if deep {
			seen = append(seen, wrappedOrNone(cmds[i])...)
		}
		after := here // the cd failed or not
		for _, w := range seen {
			mentions := func(a string) bool { return strings.Contains(a, "CDPATH") }
			if slices.ContainsFunc(w.assigns, mentions) || slices.ContainsFunc(w.args, mentions) || setsExpanded(w) {
				cdpath = true // CDPATH=/srv cd x, export CDPATH=…, export CDPAT{H,}=…
			}
			after = cdDirs(w, after, cdpath)
		}
		succeeded := after
		if to, literal, _ := cdTo(ungrouped(cmds[i]), here, cdpath); literal && ands && andAfter(cmds, i) {
			succeeded = to // cd sub && …, { cd sub; } && …
		}
		if ands && i > 0 && closesGroup(cmds[i]) && !cmds[i-1].bg {
			succeeded = ok // the group's status is its last command's
		}
		if ands && (cmds[i].link == "||" || cmds[i].link == "|") {
			// a || b: a may have succeeded; a | cd x: a pipeline's
			// commands run in subshells, and the shell stays where a ran.
			ok = addDirs(ok, succeeded...)
		} else {
			ok = succeeded
		}
		all = addDirs(all, after...)
		ever = addDirs(ever, after...)
		if exits && exitsShell(cmds, i) {
			all, ok = okBefore, okBefore // cd sub || exit 1
		}
		if to, literal, _ := cdTo(cmds[i], here, cdpath); exits && errexit && literal && alone(cmds, i) {
			all, ok = to, to // set -e; cd sub; …: a cd that fails ends the shell
		}
		if exits {
			errexit = errexitAfter(cmds, i, seen, errexit)
		}
	}
	return ever
}

// ungrouped is c without the "{" opening a group before it (not a
// quoted one, which is a command: simpleCmd.braces).
func ungrouped(c simpleCmd) simpleCmd {
	for len(c.args) > 1 && c.args[0] == "{" && c.braces > 0 {
		c.args, c.braces = c.args[1:], c.braces-1
	}
	return c
}

// closesGroup reports a "}" ending a group ({ cd sub; }), which stands
// as a command of its own after the group's last command (not a
// quoted one, which is a command: simpleCmd.braces).
func closesGroup(c simpleCmd) bool {
	return len(c.args) == 1 && c.args[0] == "}" && c.braces == 1 && c.link == ""
}

// andAfter reports whether the command after cmds[i] is joined to it by
// &&, or, when the group cmds[i] is the last command of closes right
// after it, to that group: which runs only when cmds[i] succeeded.
func andAfter(cmds []simpleCmd, i int) bool {
	if i+1 < len(cmds) && closesGroup(cmds[i+1]) && !cmds[i].bg {
		i++
	}
	return i+1 < len(cmds) && (cmds[i+1].link == "&&" || cmds[i+1].link == "||")
}

// exitsShell reports an exit joined by || to the list before it (cd sub
// || exit 1), which ends the shell unless that list succeeded: exit
// with at most a number, no redirection (one that fails keeps exit from
// running: >&5 where 5 is not open), not in a pipeline (a subshell) nor in a list run in the
// background. The caller makes sure it is no compound command's (a
// subshell's, a function's, a loop's): followDirs's exits.
func exitsShell(cmds []simpleCmd, i int) bool {
	c := cmds[i]
	if c.link != "||" || len(c.assigns) > 0 || len(c.outputs) > 0 || len(c.inputs) > 0 || len(c.here) > 0 || c.redirected ||
		len(c.args) == 0 || c.args[0] != "exit" || len(c.args) > 2 || len(c.args) == 2 && !isDigits(c.args[1]) {
		return false
	}
	j := i
	for j+1 < len(cmds) && cmds[j+1].link != "" {
		if cmds[j+1].link == "|" && j == i {
			return false // cd sub || exit 1 | cat
		}
		j++
	}
	return !cmds[j].bg
}

// cdsHold reports whether the cd commands of a line are the shell's
// and the shell stays where they lead, as followDirs takes them for
// ands: the line is not grouped (a subshell's cd, a function named cd),
// and none of its commands, nor those they run (builtin eval …), may
// change what a later cd does or where the shell is between its
// commands (unsettles), nor define a function in a script the shell
// runs itself (definesFunction). A line without &&, || and set needs
// no answer: false.
func cdsHold(l shellLine) bool {
	if l.grouped || !slices.ContainsFunc(l.cmds, func(c simpleCmd) bool {
		return c.link == "&&" || c.link == "||" || len(c.args) > 0 && c.args[0] == "set"
	}) {
		return false
	}
	for _, c := range l.cmds {
		inner, _ := wrapped(c, 0)
		if unsettles(c) || slices.ContainsFunc(inner, unsettles) || slices.ContainsFunc(inner, definesFunction) {
			return false
		}
	}
	return true
}

// exitsHold reports whether, on a line whose cds hold (cdsHold), a
// command that ends the shell when the commands before it failed (cd
// sub || exit 1) leaves the shell only where they succeeded, as
// followDirs takes it for exits: the line is read once (not also as sh
// reads $'…' and "&>", whose commands follow the first reading's),
// runs no substitution, and has no compound command (a loop, if, case,
// a group, a function, !, time, coproc), inside which exit may end a
// subshell only (cat | while …; do cd x || exit; done) or not run.
func exitsHold(l shellLine, line string) bool {
	if strings.Contains(line, "$'") || strings.Contains(line, "&>") || l.subst {
		return false
	}
	return !slices.ContainsFunc(l.cmds, func(c simpleCmd) bool {
		return len(c.args) > 0 && slices.Contains(compoundWords, c.args[0])
	})
}

// alone reports a command that is a list of its own, neither in a
// pipeline nor joined by && or || (whose failure does not end the shell
// under set -e), nor run in the background.
func alone(cmds []simpleCmd, i int) bool {
	return cmds[i].link == "" && !cmds[i].bg && (i+1 == len(cmds) || cmds[i+1].link == "")
}

// errexitAfter is whether set -e is on after cmds[i] (seen: it and the
// commands it runs), given was, before it: on after a set that turns
// it on (-e, -o errexit, and no +e or +o errexit after them) and runs
// in the shell itself, in a list of its own with no redirection (one
// that fails keeps set from running); off after any other command that
// names set or errexit (set +e, eval 'set +e'), as it may turn it off.
func errexitAfter(cmds []simpleCmd, i int, seen []simpleCmd, was bool) bool {
	names := func(w simpleCmd) bool { return slices.Contains(w.args, "set") || slices.Contains(w.args, "errexit") }
	if !slices.ContainsFunc(seen, names) {
		return was
	}
	c := cmds[i]
	if !alone(cmds, i) || len(c.args) == 0 || c.args[0] != "set" || c.expands || len(c.assigns) > 0 || len(c.outputs) > 0 ||
		len(c.inputs) > 0 || len(c.here) > 0 || c.redirected {
		return false
	}
	on := was
	for j := 1; j < len(c.args); j++ {
		a := c.args[j]
		if a == "-" || a == "--" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			return false // the positional parameters: set -- -e
		}
		set := a[0] == '-'
		if strings.Count(a, "o") > 1 {
			return false
		}
		for _, f := range a[1:] {
			switch {
			case f == 'e':
				on = set
			case f == 'o':
				if j++; j == len(c.args) || !slices.Contains(setNames, c.args[j]) {
					return false
				}
				if c.args[j] == "errexit" {
					on = set
				}
			case !strings.ContainsRune(setFlags, f):
				return false // set -Ze: bash sets nothing, and goes on
			}
		}
	}
	return on
}

// setFlags and setNames are the options bash's set takes (set -o
// lists the names); with any other it sets none and fails, and the
// shell goes on unless errexit was on already.
var (
	setFlags = "abefhkmnptuvxBCEHPT"
	setNames = []string{"allexport", "braceexpand", "emacs", "errexit", "errtrace", "functrace", "hashall",
		"histexpand", "history", "ignoreeof", "interactive-comments", "keyword", "monitor", "noclobber", "noexec",
		"noglob", "nolog", "notify", "nounset", "onecmd", "physical", "pipefail", "posix", "privileged", "verbose",
		"vi", "xtrace"}
)

// compoundWords are the shell's words that begin (or go on with) a
// compound command, or run the command after them otherwise.
var compoundWords = []string{"!", "{", "}", "if", "then", "else", "elif", "fi", "case", "esac", "for", "select",
	"while", "until", "do", "done", "function", "in", "time", "[[", "coproc"}

// definesFunction reports a command of a script the line runs (eval
// 'cd() { :; }', mapfile -C) that may define a function (a parenthesis
// in its first two words): its parentheses were inside a quoted word,
// which does not make the line grouped.
func definesFunction(c simpleCmd) bool {
	return slices.ContainsFunc(c.args[:min(2, len(c.args))], func(a string) bool { return strings.ContainsAny(a, "()") })
}

// unsettles reports a command that may change what a later cd does or
// where the shell is: function (function cd { :; }), alias (sh expands
// aliases), trap (trap 'cd ..' DEBUG runs before each command), source
// and . (a file's functions and cds), shopt (cdable_vars), enable
// (enable -n cd), a command that sets a variable an expansion names
// (export ${X}ATH=…, export CDPAT{H,}=…: CDPATH), and one whose name the shell computes,
// which may be any of those.
func unsettles(c simpleCmd) bool {
	if len(c.args) == 0 {
		return false
	}
	return c.nameDollar || c.nameGlob || slices.Contains(unsettlers, c.args[0]) || setsExpanded(c)
}

// setsExpanded reports a command that sets variables (setters) named by
// a word the shell expands (export ${X}ATH=…, export CDPAT{H,}=…), which
// may be any, CDPATH too.
func setsExpanded(c simpleCmd) bool {
	return c.expands && len(c.args) > 0 && slices.Contains(setters, c.args[0])
}

// unsettlers and setters are the commands unsettles names.
var (
	unsettlers = []string{"function", "alias", "trap", ".", "source", "shopt", "enable"}
	setters    = []string{"export", "declare", "typeset", "local", "readonly", "read", "printf", "mapfile", "readarray", "getopts", "let"}
)

// cdDirs is dirs after c when c changes the directory (cd, pushd, popd,
// builtin cd), which it may fail to do: dirs and those c leads to from
// them; dirs otherwise. cdpath: CDPATH may be set, so a relative
// directory may be found under any of its directories.
func cdDirs(c simpleCmd, dirs []string, cdpath bool) []string {
	to, _, cd := cdTo(c, dirs, cdpath)
	if !cd {
		return dirs
	}
	return addDirs(dirs, to...)
}

// cdTo is where c leads from dirs when c changes the directory (cd): a
// directory this cannot know (a word the shell expands), or c's operand
// under each of dirs. literal: c is cd or pushd with one operand that
// is a directory as written, and no option but -L, -P and -e, which
// changes the directory when it succeeds (not pushd -n, nor cd OLD NEW
// as zsh takes it).
func cdTo(c simpleCmd, dirs []string, cdpath bool) (to []string, literal, cd bool) {
	args := c.args
	if len(args) > 1 && args[0] == "builtin" {
		args = args[1:]
	}
	if len(args) == 0 || !slices.Contains([]string{"cd", "pushd", "popd"}, args[0]) {
		return nil, false, false
	}
	rest, plain := args[1:], true
	for args[0] == "cd" && len(rest) > 0 && rest[0] != "-" && strings.HasPrefix(rest[0], "-") {
		opt := rest[0]
		rest = rest[1:]
		if opt == "--" {
			break
		}
		plain = plain && strings.Trim(opt[1:], "LPe") == ""
	}
	operand, found := "", len(rest) > 0 // pushd -N, popd -N: a place in the stack
	if found {
		operand = rest[0]
	}
	var stand string
	switch {
	case args[0] == "popd" || args[0] == "pushd" && (!found || strings.HasPrefix(operand, "+") || strings.HasPrefix(operand, "-")):
		stand = "$DIRSTACK"
	case !found || operand == "~" || strings.HasPrefix(operand, "~/"):
		stand = "$HOME" + strings.TrimPrefix(operand, "~")
	case operand == "-":
		stand = "$OLDPWD"
	case shellExpands(operand):
		stand = operand
	case strings.ContainsAny(operand, "*?[") || slices.Contains(c.braced, operand) ||
		cdpath && !skipsCDPATH(operand):
		stand = "$PWD"
	}
	if stand != "" {
		return []string{stand}, false, true
	}
	for _, d := range dirs {
		to = addDirs(to, underDir(d, operand), logicalDir(underDir(d, operand)))
	}
	return to, plain && len(rest) == 1, true
}

// logicalDir is where cd (-L, the shell's default) goes for dir, a path
// as the cds before it wrote it: each ".." removes the name before it
// (cd link && cd .. is back where cd link began, not in the parent of
// link's target, where the kernel's ".." leads and where the shell
// goes when that fails, which dir is), "" standing for the shell's own
// directory; dir when it has no "..", or is a directory not known
// here ($OLDPWD/..).
func logicalDir(dir string) string {
	if !slices.Contains(strings.Split(dir, "/"), "..") || strings.HasPrefix(dir, "$") || strings.HasPrefix(dir, "~") {
		return dir
	}
	if c := filepath.Clean(dir); c != "." {
		return c
	}
	return ""
}

// skipsCDPATH reports a cd's directory the shell does not look up in
// CDPATH: absolute, ".", "..", or starting with "./" or "../" (not
// ".x", which it looks up).
func skipsCDPATH(dir string) bool {
	return filepath.IsAbs(dir) || dir == "." || dir == ".." || strings.HasPrefix(dir, "./") || strings.HasPrefix(dir, "../")
}

// addDirs is dirs with more added, each once (a new slice); past
// maxDirs, the shell's own directory and "$PWD".
func addDirs(dirs []string, more ...string) []string {
	out := slices.Clone(dirs)
	for _, d := range more {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) > maxDirs {
		return []string{"", "$PWD"}
	}
	return out
}

// inDirs are paths, each relative one under each of c's dirs (as
// written for the shell's own).
func inDirs(c simpleCmd, paths []string) []string {
	var out []string
	own := len(c.dirs) == 0 || slices.Contains(c.dirs, "")
	for _, p := range paths {
		if own || anchored(p) {
			out = append(out, p)
		}
	}
	for _, p := range paths {
		for _, d := range c.dirs {
			if q := underDir(d, p); q != p {
				out = append(out, q)
			}
		}
	}
	return out
}

// wrappedIn is what wrapped finds, in the directories c may run in,
// those a wrapper's option leads to (env -C DIR, sudo -D DIR, find
// -execdir: wrapperDirs) and those its own cd commands lead to (sh -c
// 'cd /srv; ls > f'). A wrapper's directory is taken for every command
// c runs, which may be more than run there.
func wrappedIn(c simpleCmd) ([]simpleCmd, error) {
	inner, err := wrapped(c, 0)
	dirs := c.dirs
	for _, w := range append([]simpleCmd{c}, inner...) {
		for _, d := range wrapperDirs(w) {
			dirs = cdDirs(simpleCmd{args: []string{"cd", "--", d}}, dirs, false)
		}
	}
	if repeats(inner) {
		dirs = followDirs(inner, dirs, false, false, false)
	}
	followDirs(inner, dirs, false, false, false)
	followLinks(inner, c.links, false, repeats(inner))
	return inner, err
}

// wrapperDirs are the directories the command c runs is run in, when c
// says: env's -C and --chdir, sudo's -D and --chdir (read until the
// command, as they read their options), one not known here ("$PWD")
// for sudo's -R and --chroot, the starting points of a
// find with -execdir or -okdir, under which it runs the command in the
// directories of the files found, the directory of cmake -E chdir
// DIR CMD, and uv's and uvx's --directory (uv --directory DIR run CMD;
// UV_WORKING_DIR=DIR before it).
func wrapperDirs(c simpleCmd) []string {
	if len(c.args) == 0 {
		return nil
	}
	name := filepath.Base(c.args[0])
	var dirs []string
	each := func(opt, v string) {
		switch {
		case opt == "-C" && name == "env" || opt == "-D" && name == "sudo" || opt == "--chdir":
			dirs = append(dirs, v)
		case opt == "-R" && name == "sudo" || opt == "--chroot":
			dirs = append(dirs, "$PWD") // under another root: not known here
		}
	}
	switch name {
	case "env":
		getoptUntilOperand(c.args[1:], "uCSa", []string{"unset=", "chdir=", "split-string=", "argv0="}, each)
	case "sudo":
		getoptUntilOperand(c.args[1:], "ugCDhprtUTRac", []string{"user=", "group=", "chdir=", "close-from=", "host=",
			"prompt=", "role=", "type=", "other-user=", "command-timeout=", "chroot=", "login-class="}, each)
	case "find":
		if slices.Contains(c.args, "-execdir") || slices.Contains(c.args, "-okdir") {
			dirs = findStartingPoints(c.args[1:])
		}
	case "uv":
		if dir := uvGlobals(c.environ(), c.args[1:]).dir; dir != "" {
			dirs = append(dirs, dir)
		}
	case "uvx":
		if dir := uvGlobals(c.environ(), append([]string{"tool", "run"}, c.args[1:]...)).dir; dir != "" {
			dirs = append(dirs, dir)
		}
	case "cmake":
		if len(c.args) > 4 && c.args[1] == "-E" && c.args[2] == "chdir" {
			dirs = append(dirs, c.args[3])
		}
	}
	return dirs
}

// getoptUntilOperand is getopt for a command that reads its options up
// to its first operand (the command it runs: env, sudo), given the words
// after its name.
func getoptUntilOperand(args []string, valued string, long []string, each func(opt, value string)) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			return
		}
		n := 1
		if i+1 < len(args) && takesNext(a, valued, long) {
			n = 2 // the option's value is the next word
		}
		getopt(args[i:i+n], valued, long, each)
		i += n - 1
	}
}

// takesNext reports whether the option word a, as getopt reads it, ends
// with an option whose value is the next word.
func takesNext(a, valued string, long []string) bool {
	if name, ok := strings.CutPrefix(a, "--"); ok {
		_, hasValue := longOption(name, long)
		return hasValue && !strings.Contains(name, "=")
	}
	k := strings.IndexAny(a[1:], valued)
	return k >= 0 && k+2 == len(a)
}

// removalAfterCd says why an rm or rmdir after a cd removes the root,
// the home directory or a top-level directory (cd / && rm -rf usr, cd
// && rm -rf .), or "". A directory not known here is no reason.
func removalAfterCd(c simpleCmd, workingDirs []string) string {
	for _, a := range nonFlags(c.args[1:]) {
		for _, d := range c.dirs {
			q := underDir(d, a)
			if q == a || shellExpands(strings.TrimPrefix(q, "$HOME")) {
				continue
			}
			if p := absPath(q, workingDirs); filepath.IsAbs(p) && (p == "/" || p == home() || filepath.Dir(p) == "/") {
				return "it removes " + p
			}
		}
	}
	return ""
}
