package permission

import (
	"cmp"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A command may run another: behind a wrapper (sudo rm, env X=1 rm, xargs
// rm), a keyword or a group's opening (then rm, ! rm, (rm, { rm), as a
// script (sh -c 'rm …', eval rm …, trap 'rm …' EXIT, alias r='rm …',
// su -c 'rm …'), as
// find's -exec, as a busybox applet, in a function's body or a case
// clause (f() { rm …; }, a) rm …;;), or by its path (/bin/rm). Deny and ask rules must see those commands too, or in bypass
// mode "sudo rm -rf x" would escape a deny rule on rm; so must the safety
// checks ("sudo rm -rf ~").

// wrapper is how a wrapper's words read: its options (short ones may be
// clustered, -Eu root; long ones abbreviated, as getopt takes them), the
// operands before the command (timeout's duration), then the command.
type wrapper struct {
	// valued are the options that take a value: the next word, or the
	// rest of the word (-n5, -Eu root, --user=root).
	valued []string
	// optional are the short options whose value, if any, is the rest of
	// the word (nsenter -m, -mFILE): a cluster ends with them.
	optional []string
	// maybe are long options that may take the next word as their value
	// or not: both readings are read.
	maybe []string
	// script are the valued options whose value is a shell script (su
	// -c), runs those whose value is a program that runs (su -s).
	script, runs []string
	// count is how many operands come before the command; with
	// noCommand none is a command (su USER ARGS…: -c's script runs).
	count     int
	noCommand bool
	// joined: the command's words are joined and run by sh -c (watch;
	// with -x, --exec, as a command).
	joined bool
}

// suOptions are su's and runuser's: the user and the shell's arguments
// are operands, -c's script runs, wherever it stands.
var suOptions = wrapper{
	valued: []string{"-c", "-s", "-g", "-G", "-w", "-u", "--command", "--session-command", "--shell", "--group", "--supp-group", "--whitelist-environment", "--user"},
	script: []string{"-c", "--command", "--session-command"},
	runs:   []string{"-s", "--shell"},
}

// wrappers are the commands that run the command after their own options.
var wrappers = map[string]wrapper{
	"sudo": {valued: []string{"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "-a", "-c", "--user", "--group", "--chdir", "--host",
		"--prompt", "--role", "--type", "--other-user", "--command-timeout", "--chroot", "--auth-type", "--login-class", "--close-from"}},
	"doas":    {valued: []string{"-u", "-C", "-a"}},
	"pkexec":  {valued: []string{"-u", "--user"}},
	"env":     {valued: []string{"-u", "-C", "-S", "-a", "--unset", "--chdir", "--split-string", "--argv0"}},
	"nice":    {valued: []string{"-n", "--adjustment"}},
	"ionice":  {valued: []string{"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}},
	"chrt":    {valued: []string{"-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"}, count: 1},
	"taskset": {count: 1}, // the mask or CPU list (-c is a flag)
	"nohup":   {},
	"setsid":  {},
	"stdbuf":  {valued: []string{"-i", "-o", "-e", "--input", "--output", "--error"}},
	"timeout": {valued: []string{"-s", "-k", "--signal", "--kill-after"}, count: 1},
	"xargs":   {valued: []string{"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}}, // --max-lines[=N], -l[N], -i[R], -e[E]: optional
	"command": {},
	"builtin": {},
	"exec":    {valued: []string{"-a"}},
	"time":    {valued: []string{"-o", "-f", "--output", "--format"}}, // GNU time's
	"watch":   {valued: []string{"-n", "-q", "--interval", "--equexit"}, optional: []string{"-d"}, joined: true},
	"chroot":  {count: 1},
	"unshare": {valued: []string{"-R", "-w", "-S", "-G", "--root", "--wd", "--setuid", "--setgid", "--propagation", "--setgroups",
		"--map-user", "--map-group", "--map-users", "--map-groups", "--monotonic", "--boottime"},
		optional: []string{"-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T"}},
	"nsenter": {valued: []string{"-t", "-S", "-G", "-W", "--target", "--setuid", "--setgid", "--wdns"},
		optional: []string{"-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T", "-r", "-w"}},
	"strace": {valued: []string{"-a", "-b", "-e", "-E", "-I", "-o", "-O", "-p", "-P", "-s", "-S", "-u", "-U", "-X",
		"--columns", "--detach-on", "--env", "--interruptible", "--attach", "--user", "--output", "--string-limit",
		"--summary-sort-by", "--summary-columns", "--summary-syscall-overhead", "--trace-path", "--const-print-style",
		"--trace", "--abbrev", "--verbose", "--raw", "--signal", "--status", "--read", "--write", "--fault", "--inject", "--kvm"},
		maybe: []string{"--quiet"}},
	"ltrace": {valued: []string{"-a", "-A", "-D", "-e", "-F", "-l", "-n", "-o", "-p", "-s", "-u", "-w", "-x", "-X",
		"--align", "--config", "--indent", "--library", "--output", "--where"}},
	"su":      withNoCommand(suOptions),
	"runuser": withNoCommand(suOptions), // runuser -u USER: the command after
	"script": {valued: []string{"-I", "-O", "-B", "-T", "-m", "-E", "-o", "-c", "--log-in", "--log-out", "--log-io", "--log-timing",
		"--logging-format", "--echo", "--output-limit", "--command"}, optional: []string{"-t"},
		script: []string{"-c", "--command"}, count: 1}, // BSD script FILE COMMAND…
	"flock": {valued: []string{"-w", "-E", "-c", "--timeout", "--conflict-exit-code", "--command"},
		script: []string{"-c", "--command"}, count: 1}, // flock FILE -c SCRIPT, flock FILE COMMAND…
	"catchsegv":    {},
	"firejail":     {}, // its options are --name or --name=value
	"valgrind":     {}, // so are valgrind's
	"unbuffer":     {},
	"proxychains":  {valued: []string{"-f"}},
	"proxychains4": {valued: []string{"-f"}},
	"faketime":     {valued: []string{"-p", "--date-prog"}, count: 1}, // faketime TIMESTAMP COMMAND…
	// Keywords that begin a command.
	"!": {}, "then": {}, "do": {}, "else": {}, "elif": {}, "if": {}, "while": {}, "until": {}, "{": {}, "(": {},
}

// keywords are the wrappers that are the shell's words before a command,
// no program: the command after one is the line's, not one it runs.
var keywords = []string{"!", "then", "do", "else", "elif", "if", "while", "until", "{", "("}

func withNoCommand(w wrapper) wrapper {
	w.noCommand = true
	return w
}

// toolOptions are, for tools whose global options may stand before their
// subcommand, the options that take the next word as their value
// (kubectl -n NS delete); the rest of a word (-nNS, --namespace=NS) is
// one too. Deny and ask rules see the subcommand without them
// (toolSubcommands).
var toolOptions = map[string][]string{
	"npm": {"-C", "-w", "--script-shell", "--prefix", "--workspace", "--loglevel", "--registry", "--userconfig", "--globalconfig", "--cache",
		"--cwd", "--scope", "--tag", "--otp", "--access", "--omit", "--include"},
	"pnpm": {"-C", "-F", "--script-shell", "--dir", "--filter", "--filter-prod", "--workspace-dir", "--reporter", "--loglevel", "--store-dir",
		"--registry", "--config-dir", "--virtual-store-dir"},
	"yarn": {"--cwd", "--cache-folder", "--modules-folder", "--mutex", "--network-timeout", "--registry", "--use-yarnrc",
		"--global-folder", "--link-folder", "--preferred-cache-folder", "--network-concurrency", "--otp"},
	"docker": {"-c", "-H", "-l", "--context", "--host", "--log-level", "--config", "--tlscacert", "--tlscert", "--tlskey"},
	"podman": {"-c", "--connection", "--url", "--identity", "--root", "--runroot", "--storage-driver", "--storage-opt",
		"--log-level", "--cgroup-manager", "--conmon", "--events-backend", "--hooks-dir", "--module", "--network-cmd-path",
		"--network-config-dir", "--runtime", "--runtime-flag", "--tmpdir", "--volumepath", "--imagestore", "--ssh", "--out",
		"--config", "--cdi-spec-dir", "--db-backend", "--network-backend"},
	"kubectl": {"-n", "-s", "-v", "--namespace", "--context", "--cluster", "--user", "--server", "--kubeconfig", "--token",
		"--as", "--as-group", "--as-uid", "--certificate-authority", "--client-certificate", "--client-key", "--cache-dir",
		"--request-timeout", "--tls-server-name", "--v", "--vmodule", "--log-file", "--log-dir", "--profile", "--profile-output"},
	"helm": {"-n", "--namespace", "--kube-context", "--kubeconfig", "--kube-apiserver", "--kube-as-user", "--kube-as-group",
		"--kube-ca-file", "--kube-token", "--kube-tls-server-name", "--registry-config", "--repository-cache",
		"--repository-config", "--burst-limit", "--qps", "--content-cache"},
	"cargo": {"-C", "-Z", "--config", "--color"},
	"pip": {"--python", "--log", "--log-file", "--cache-dir", "--proxy", "--retries", "--timeout", "--exists-action",
		"--trusted-host", "--cert", "--client-cert", "--keyring-provider", "--use-feature", "--use-deprecated",
		"--progress-bar", "--resume-retries", "--src"},
	"terraform": {}, // -chdir=DIR: the value is always in the word
	"gh":        {"-R", "--repo", "--hostname"},
}

func init() {
	toolOptions["pip3"] = toolOptions["pip"]
}

// toolSubcommands are the indexes in args (a toolOptions tool's words)
// where its subcommand may stand after global options (none when it
// comes first). An option not known to take a value may take the next
// word or not (npm --new-option VALUE publish): both words are read; so
// are the words of an option cluster (-nns). cargo's +TOOLCHAIN is an
// option.
func toolSubcommands(args []string) []int {
	valued := toolOptions[args[0]]
	var out []int
	maybe := false // the word before may be an option's value
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				out = append(out, i+1)
			}
			return out
		case strings.HasPrefix(a, "-") && a != "-" || args[0] == "cargo" && strings.HasPrefix(a, "+"):
			if slices.Contains(valued, a) {
				i++ // its value
				maybe = false
				continue
			}
			// --opt=VALUE holds its value; any other may take the next
			// word.
			maybe = !strings.Contains(a, "=")
		default:
			if i > 1 {
				out = append(out, i)
			}
			if !maybe {
				return out
			}
			maybe = false
		}
	}
	return out
}

// scriptShells are the programs npm (and pnpm) is told to run its
// scripts with: --script-shell PROG, --script-shell=PROG (abbreviated
// too, as npm takes long options), and npm_config_script_shell=PROG
// before it (npm reads such variables whatever their case). An option
// npm does not know but keeps, --script_shell=PROG or
// --SCRIPT-SHELL=PROG, it passes to its scripts as
// npm_config_script_shell, which an npm a script runs takes: such a
// spelling counts as well, as does pnpm's --config.script-shell=PROG.
func scriptShells(c simpleCmd) []string {
	var out []string
	for _, a := range c.environ() {
		if k, v, _ := strings.Cut(a, "="); strings.EqualFold(k, "npm_config_script_shell") {
			out = append(out, v)
		}
	}
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		if a == "--" {
			break
		}
		long, v, has := strings.Cut(a, "=")
		if key := strings.TrimPrefix(strings.TrimPrefix(long, "--"), "config."); has && strings.HasPrefix(long, "--") &&
			strings.EqualFold(strings.ReplaceAll(key, "_", "-"), "script-shell") {
			out = append(out, v)
			continue
		}
		if len(long) < len("--script") || !strings.HasPrefix("--script-shell", long) {
			continue
		}
		if !has && i+1 < len(c.args) {
			i++
			v = c.args[i]
		}
		out = append(out, v)
	}
	return out
}

// npmConfigFile reports whether npm is told to read its configuration
// from a file the line names, which may set the script-shell it runs
// scripts with: --userconfig FILE, --globalconfig FILE (abbreviated
// too), npm_config_userconfig=FILE or npm_config_globalconfig=FILE
// in its environment, or npm_config_prefix=DIR, whose etc/npmrc is the
// global one (and where npm -g installs).
func npmConfigFile(c simpleCmd) bool {
	for _, a := range c.environ() {
		k, _, _ := strings.Cut(a, "=")
		if strings.EqualFold(k, "npm_config_userconfig") || strings.EqualFold(k, "npm_config_globalconfig") ||
			strings.EqualFold(k, "npm_config_prefix") {
			return true
		}
	}
	for _, a := range c.args[min(1, len(c.args)):] {
		if a == "--" {
			break
		}
		long, _, _ := strings.Cut(a, "=")
		if len(long) >= len("--userc") && strings.HasPrefix("--userconfig", long) ||
			len(long) >= len("--globalc") && strings.HasPrefix("--globalconfig", long) {
			return true
		}
	}
	return false
}

// projectDirs are the directories whose package.json c, a package
// manager, runs the scripts of, as it reads its options up to "--":
// npm's --prefix DIR and -C DIR (--prefix abbreviated to --prefi
// too), pnpm's --dir DIR and -C DIR, yarn's --cwd DIR (or
// --OPTION=DIR); without one, the current directory ("."), which the
// cds before c may have changed. So too that of npx (its options up to
// the command it runs, npm's --prefix and -C among them) and bunx,
// which run the command of the project's node_modules/.bin first. So too the directory of make's
// Makefile and the makefiles it runs the recipes of (makeProject), that
// of the module whose code go test, go run and go generate run
// (goProject), the Cargo project whose build scripts cargo runs
// (cargoProject), that of the project uv works on, whose
// environment it syncs and whose code it builds and runs (uvProject),
// and the paths npm, pnpm and yarn add (install) and pip install install
// a package from (npmInstalls, pipInstalls).
func projectDirs(c simpleCmd) []string {
	if len(c.args) == 0 {
		return nil
	}
	var long []string // the long option, and its shortest abbreviation
	switch c.args[0] {
	case "make", "gmake":
		return makeProject(c.args[1:])
	case "go":
		return goProject(c.args[1:])
	case "cargo":
		return cargoProject(c.args[1:])
	case "pip", "pip3":
		return pipInstalls(c.args[1:])
	case "uv":
		return uvProject(c.environ(), c.args[1:])
	case "uvx":
		return uvProject(c.environ(), append([]string{"tool", "run"}, c.args[1:]...)) // uv tool run
	case "npm", "npx":
		long = []string{"--prefix", "--prefi"}
	case "bunx":
		return []string{"."}
	case "pnpm":
		long = []string{"--dir", "--dir"}
	case "yarn":
		long = []string{"--cwd", "--cwd"}
	default:
		return nil
	}
	var out []string
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		if a == "--" {
			break
		}
		opt, v, has := strings.Cut(a, "=")
		switch {
		case opt == "-C" && c.args[0] != "yarn":
		case len(opt) >= len(long[1]) && strings.HasPrefix(long[0], opt):
		case c.args[0] == "npx" && !strings.HasPrefix(a, "-"):
			i = len(c.args) // the command npx runs: the rest are its words
			continue
		case c.args[0] == "npx" && !has && slices.Contains(npxRunner.valued, a):
			i++ // its value
			continue
		default:
			continue
		}
		if !has {
			if i+1 == len(c.args) {
				break
			}
			i++
			v = c.args[i]
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		out = []string{"."} // the current directory's, which a cd may have changed
	}
	if c.args[0] != "npx" {
		out = append(out, npmInstalls(c.args[0], c.args[1:])...)
	}
	return out
}

// uvUserLevel are uv's subcommands that work on no project, and read
// no configuration of the current directory (uv tool run: uvx).
var uvUserLevel = []string{"", "tool", "self", "help", "generate-shell-completion"}

// uvProject are the directories of the projects uv works on, given the
// variables set before it and its words after its name: those it is
// told to find its project in (--directory, --project, UV_WORKING_DIR=,
// UV_PROJECT=: uvGlobals), or else the current directory
// ("."), whose pyproject.toml and uv.toml uv reads, as cargo and npm
// read theirs, for every subcommand but uvUserLevel's (uv run pytest,
// uv sync, uv build, uv pip install); and those of the packages it
// builds from a path (uvx --from . tool, uv run --with-editable DIR,
// uv pip install -e DIR, uv add DIR: uvBuilds), whose build backend and
// build scripts it runs, and whose code the environment then imports.
func uvProject(assigns, words []string) []string {
	g := uvGlobals(assigns, words)
	out := g.projects
	if len(out) == 0 && !slices.Contains(uvUserLevel, g.subcommand(words)) {
		out = []string{"."}
	}
	for _, f := range append(g.froms, uvBuilds(g, words)...) {
		if dir, ok := localPackage(f); ok {
			out = append(out, underDir(g.dir, dir))
		}
	}
	return out
}

// localPackage is the path a package manager's package spec names, if
// it names one: a path (./x, ../x, /x, ~/x, ~user/x; not npm's range
// ~1.2), file://PATH, file:PATH, link:PATH (pnpm's and yarn's) or
// portal:PATH (yarn's), and NAME @ SPEC (pip's direct reference) or
// NAME@SPEC (npm's) of one.
func localPackage(spec string) (string, bool) {
	if i := strings.LastIndex(spec, "@"); i >= 0 && !strings.HasPrefix(spec, ".") && !strings.HasPrefix(spec, "/") && !strings.HasPrefix(spec, "~") {
		spec = strings.TrimSpace(spec[i+1:])
	}
	if p, ok := strings.CutPrefix(spec, "file://"); ok {
		return p, true
	}
	for _, scheme := range []string{"file:", "link:", "portal:"} {
		if p, ok := strings.CutPrefix(spec, scheme); ok {
			return p, true
		}
	}
	tilde := strings.HasPrefix(spec, "~") && (len(spec) == 1 || spec[1] < '0' || spec[1] > '9')
	return spec, strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || tilde
}

// pipInstalls are the paths pip install builds and installs a package
// from, given pip's words after its name: its operands and -e's
// (--editable's) values that name one (localPackage). Its setup.py and
// build backend run, and the environment imports its code after. So too
// the requirements files it reads (-r, --requirement), whose lines may
// name any (-e /srv/other), as curl -K's file may name any output.
func pipInstalls(words []string) []string {
	var specs, out []string
	operands := getopt(words, "tdwcerif", pipLong, func(opt, v string) {
		switch opt {
		case "-e", "--editable":
			specs = append(specs, v)
		case "-r", "--requirement":
			out = append(out, v)
		}
	})
	if len(operands) == 0 || operands[0] != "install" {
		return nil
	}
	for _, s := range append(specs, operands[1:]...) {
		if p, ok := localPackage(s); ok {
			out = append(out, p)
		}
	}
	return out
}

// npmInstallers are npm install's names (and its misspellings npm
// takes), add, and link, which installs a folder as well.
var npmInstallers = []string{"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall",
	"add", "link", "ln"}

// npmInstalls are the paths npm install (npmInstallers), and pnpm's and
// yarn's add, install and link, install a package from, given the
// tool's name and its words after it: the operands that name one
// (localPackage). The package becomes a dependency of the project,
// whose scripts and tests then run its code.
func npmInstalls(tool string, words []string) []string {
	var out []string
	sub := ""
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case a == "--":
			return out
		case strings.HasPrefix(a, "-") && a != "-":
			if slices.Contains(toolOptions[tool], a) {
				i++ // its value
			}
		case sub == "":
			sub = a
			if !slices.Contains(npmInstallers, sub) {
				return nil
			}
		default:
			if p, ok := localPackage(a); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// uvBuildShort and uvBuildLong are the options of uv pip install, uv
// tool install and uv add that take a value (for getopt), uv's global
// ones among them; one not known here stands as an operand, so more is
// taken for a package built than is.
var (
	uvBuildShort = "rceifpPCbmwt"
	uvBuildLong  = append([]string{"requirement=", "requirements=", "constraint=", "constraints=", "override=", "overrides=",
		"build-constraint=", "build-constraints=", "editable=", "from=", "with=", "with-editable=", "with-requirements=",
		"index=", "default-index=", "index-url=", "extra-index-url=", "find-links=", "python=", "target=", "prefix=",
		"config-setting=", "config-settings=", "upgrade-package=", "reinstall-package=", "refresh-package=",
		"no-build-isolation-package=", "extra=", "group=", "optional=", "package=", "script=", "marker=", "rev=", "tag=",
		"branch=", "bounds=", "index-strategy=", "keyring-provider=", "resolution=", "prerelease=", "exclude-newer=",
		"link-mode=", "python-platform=", "python-version=", "no-binary=", "only-binary=", "torch-backend="},
		"directory=", "project=", "cache-dir=", "config-file=", "color=", "allow-insecure-host=")
)

// uvBuilds are the packages uv pip install, uv tool install and uv add
// build and install, given uv's words after its name (g, as uvGlobals
// reads them): their operands, and the values of -e (--editable),
// --from, --with and --with-editable; and the requirements files they
// read (-r, --with-requirements), whose lines may name any path, as
// pip's (pipInstalls), and those uv pip sync and uv pip compile read.
// uv run's and uv tool run's are uvGlobals' froms.
func uvBuilds(g uvOptions, words []string) []string {
	if g.sub < 0 {
		return nil
	}
	rest := words[g.sub:]
	switch {
	case len(rest) > 1 && rest[0] == "pip" && (rest[1] == "sync" || rest[1] == "compile"):
		// Their operands are requirements files (requirements.in,
		// pyproject.toml, setup.py), whose lines may name any path to
		// build, and whose project's metadata, unless static, uv builds
		// by running its build backend.
		var files []string
		for _, f := range getopt(rest[2:], uvBuildShort, uvBuildLong, nil) {
			files = append(files, "file:"+f)
		}
		return files
	case len(rest) > 1 && (rest[0] == "pip" || rest[0] == "tool") && rest[1] == "install":
		rest = rest[2:]
	case rest[0] == "add":
		rest = rest[1:]
	default:
		return nil
	}
	var out []string
	operands := getopt(rest, uvBuildShort, uvBuildLong, func(opt, v string) {
		switch opt {
		case "-e", "--editable", "--from", "--with", "--with-editable":
			out = append(out, strings.Split(v, ",")...)
		case "-r", "--requirement", "--requirements", "--with-requirements":
			out = append(out, "file:"+v) // a path, however it is spelled
		}
	})
	return append(out, operands...)
}

// makeProjectOptions are make's options naming its directory and its
// makefiles.
var makeProjectOptions = optSpec{short: "CfIoWE", long: []string{"--directory", "--file", "--makefile", "--eval"}, abbrev: true}

// makeProject are the directory make runs in, given its words after its
// name (-C DIR, --directory=DIR, each under the one before, or "."), and
// the makefiles it reads there (-f FILE, --file, --makefile), whose
// recipes it runs.
func makeProject(words []string) []string {
	vals, _ := makeProjectOptions.values(words)
	dir := ""
	var files []string
	for _, o := range vals {
		switch o.opt {
		case "-C", "--directory":
			dir = underDir(dir, o.v)
		case "-f", "--file", "--makefile":
			files = append(files, o.v)
		}
	}
	out := []string{cmp.Or(dir, ".")}
	for _, f := range files {
		out = append(out, underDir(dir, f))
	}
	return out
}

// goProject is the directory of the module whose code go test, go run
// and go generate run, given go's words after its name: -C DIR's, or
// "."; none for go's other commands.
func goProject(words []string) []string {
	dir := "."
	if len(words) > 1 && (words[0] == "-C" || words[0] == "--C") {
		dir, words = words[1], words[2:]
	} else if len(words) > 0 && (strings.HasPrefix(words[0], "-C=") || strings.HasPrefix(words[0], "--C=")) {
		_, dir, _ = strings.Cut(words[0], "=")
		words = words[1:]
	}
	if len(words) > 0 && slices.Contains([]string{"test", "run", "generate"}, words[0]) {
		return []string{dir}
	}
	return nil
}

// cargoProject are the directory cargo runs in (-C DIR, or "."), whose
// .cargo/config.toml it reads (a rustc wrapper, a runner), and the
// manifest of the project whose build scripts (build.rs), tests and
// binaries it runs (--manifest-path FILE under -C's DIR; cargo install's
// --path DIR, and add's, a dependency whose build scripts every later
// build runs), given its words after its name.
func cargoProject(words []string) []string {
	dir := ""
	var manifests, paths []string
	operands := getopt(words, "pFjZC", cargoLong, func(opt, v string) {
		switch opt {
		case "-C":
			dir = underDir(dir, v)
		case "--manifest-path":
			manifests = append(manifests, v)
		case "--path":
			paths = append(paths, v)
		}
	})
	if sub := cargoSubcommand(operands); sub == "install" || sub == "add" {
		manifests = append(manifests, paths...)
	}
	out := []string{cmp.Or(dir, ".")}
	for _, m := range manifests {
		out = append(out, underDir(dir, m))
	}
	return out
}

// packageRunner is how a command that runs a package's command (npx,
// pnpm dlx, uvx, …) reads its words: the command is the first operand
// after its options. valued options take the next word; flags do not;
// any other option may or may not (both readings are read). The value
// of a script option is a shell script it runs (npx -c); with a
// shellMode flag the command's words are one (pnpm dlx -c).
type packageRunner struct {
	valued, flags, script, shellMode []string
}

var (
	npxRunner = packageRunner{
		valued: []string{"-p", "--package", "-c", "--call", "-w", "--workspace", "--prefix", "--loglevel", "--registry", "--cache", "--userconfig"},
		flags:  []string{"-y", "--yes", "--no", "-q", "--quiet", "--ws", "--workspaces", "--include-workspace-root"},
		script: []string{"-c", "--call"},
	}
	uvxRunner = packageRunner{
		valued: []string{"--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--index", "--default-index",
			"--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--directory", "--project", "--config-file", "--cache-dir",
			"--color", "--env-file", "--package", "--extra", "--group", "--constraints", "--overrides"},
		flags: []string{"-q", "--quiet", "-v", "--verbose", "--isolated", "--no-sync", "--frozen", "--locked", "--no-project",
			"--all-extras", "--active", "--offline", "--no-cache", "-m", "--module", "--script"},
	}
)

// packageRunners are the package runners by their command (and
// subcommand).
var packageRunners = map[string]packageRunner{
	"npx": npxRunner, "npm exec": npxRunner, "npm x": npxRunner,
	"pnpm dlx":  {valued: []string{"--package"}, flags: []string{"-s", "--silent"}, shellMode: []string{"-c", "--shell-mode"}},
	"pnpm exec": {flags: []string{"-r", "--recursive", "--parallel", "--no-bail", "--report-summary"}, shellMode: []string{"-c", "--shell-mode"}},
	"yarn dlx":  {valued: []string{"-p", "--package"}, flags: []string{"-q", "--quiet"}},
	"yarn exec": {},
	"bunx":      {valued: []string{"-p", "--package"}, flags: []string{"--bun"}},
	"uvx":       uvxRunner, "uv run": uvxRunner,
	"pipx run": {valued: []string{"--spec", "--python", "--pip-args", "--index-url", "-i"},
		flags: []string{"--no-cache", "--path", "--pypackages", "-q", "--quiet", "-v", "--verbose"}},
}

// runPackage reads the words after a package runner (key: "npx", "pnpm
// dlx", …; none when key is not one) and records the command it runs
// (run), its version aside (eslint@8, ruff==0.4 are eslint and ruff),
// or the scripts (script).
func runPackage(key string, words []string, run func([]string), script func(string)) {
	r, ok := packageRunners[key]
	if !ok {
		return
	}
	shellMode := false
	var starts []int
	maybe := false
	for i := 0; i < len(words); i++ {
		a := words[i]
		opt, v, has := strings.Cut(a, "=")
		switch {
		case a == "--":
			if i+1 < len(words) {
				starts = append(starts, i+1)
			}
			i = len(words)
		case strings.HasPrefix(a, "-") && a != "-":
			maybe = false
			switch {
			case slices.Contains(r.shellMode, opt):
				shellMode = true
			case slices.Contains(r.valued, opt):
				if !has && i+1 < len(words) {
					i++
					v = words[i]
				}
				if slices.Contains(r.script, opt) {
					script(v)
				}
			case !slices.Contains(r.flags, opt):
				maybe = !has
			}
		default:
			starts = append(starts, i)
			if !maybe {
				i = len(words)
			}
			maybe = false
		}
	}
	for _, i := range starts {
		cmd := slices.Clone(words[i:])
		if shellMode {
			script(strings.Join(cmd, " "))
			continue
		}
		cmd[0], _, _ = strings.Cut(cmd[0], "==")
		if at := strings.LastIndex(cmd[0], "@"); at > 0 {
			cmd[0] = cmd[0][:at]
		}
		run(cmd)
	}
}

// pythonRE is a Python interpreter's name: python, python3, python3.12,
// pypy3.
var pythonRE = regexp.MustCompile(`^(python|pypy)[0-9.]*$`)

// pythonModule reads python's options (clustered short ones; -X and -W
// take a value) up to -m MODULE, whose words follow; ok is false when a
// script, -c's code or "-" comes first.
func pythonModule(args []string) (mod string, rest []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			return "", nil, false
		}
		if strings.HasPrefix(a, "--") {
			if a == "--check-hash-based-pycs" {
				i++
			}
			continue
		}
		for k := 1; k < len(a); k++ {
			switch a[k] {
			case 'c':
				return "", nil, false
			case 'm', 'X', 'W':
				v := a[k+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				if a[k] == 'm' {
					return v, args[i+1:], v != ""
				}
				k = len(a)
			}
		}
	}
	return "", nil, false
}

// debuggers run what their commands say.
var debuggers = []string{"gdb", "gdb-multiarch", "cgdb", "lldb"}

// shells run their -c script.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"}

// errOpaque: a command runs commands that cannot be told from its words
// (parallel's), which every deny and ask pattern then matches; unlike a
// script that cannot be read, it is no safety ask.
var errOpaque = errors.New("what it runs cannot be read")

// worse is the error to keep of two: a script that cannot be read before
// an opaque command.
func worse(err, e error) error {
	if err == nil || errors.Is(err, errOpaque) && e != nil {
		return e
	}
	return err
}

// wrapped returns the commands c runs besides itself (and those they run),
// reading scripts at most maxNesting deep; err is set when a script
// cannot be read (errOpaque when what runs cannot be told).
func wrapped(c simpleCmd, depth int) (out []simpleCmd, err error) {
	if depth > maxNesting {
		return nil, errTooDeep
	}
	// add records a command c runs; alias another reading of c itself.
	// Either takes c's expansions: the words are those the shell made.
	push := func(args []string, reading bool) {
		if len(args) == 0 {
			return
		}
		// It inherits c's environment (sudo may reset it; taken all
		// the same).
		w := simpleCmd{args: args, exported: c.environ(), expands: c.expands, subst: c.subst, reading: reading}
		if c.args[0] != "xargs" {
			// It reads c's input (xargs gives it none).
			w.from, w.inputs, w.here = c.from, c.inputs, c.here
		}
		out = append(out, w)
		more, e := wrapped(w, depth+1)
		out = append(out, more...)
		err = worse(err, e)
	}
	add := func(args []string) { push(args, false) }
	alias := func(args []string) { push(args, true) }
	script := func(line string) {
		l, e := parseNested(line, depth+1)
		for _, w := range l.cmds {
			w.subst = w.subst || l.subst
			w.exported = append(c.environ(), w.exported...)
			out = append(out, w)
			more, e := wrapped(w, depth+1)
			out = append(out, more...)
			err = worse(err, e)
		}
		err = worse(err, e)
	}
	args := c.args
	if len(args) == 0 {
		return nil, nil
	}
	name := args[0]
	if body, ok := definedBody(args); ok {
		// And as the command it may be as well: "( rm x )" and "! ( rm
		// x )" read as a case clause's "PATTERN ) BODY" too.
		alias(body)
	}
	if opaque, ok := toolRuns(c, add, script); ok {
		// tar --to-command, rsync -e, rg --pre, make SHELL=, awk, sed.
		if opaque {
			err = worse(err, errOpaque)
		}
		return out, err
	}
	switch {
	case strings.HasPrefix(name, "(") || strings.HasPrefix(name, "{"):
		// "(rm" and "{rm" are "(" or "{" and "rm"; "( rm", and dash's
		// "(( rm" (two subshells), run the next word.
		if rest := strings.TrimLeft(name, "({"); rest != "" {
			alias(append([]string{rest}, args[1:]...))
		} else {
			alias(slices.Clone(args[1:]))
		}
		return out, err
	case strings.Contains(name, "/"):
		alias(append([]string{filepath.Base(name)}, args[1:]...))
		return out, err
	case strings.HasPrefix(name, "git-") && len(name) > 4:
		// git-push, as git's exec path holds it, is git push.
		alias(append([]string{"git", name[4:]}, args[1:]...))
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
	case name == "hash":
		// bash's hash -p PATH NAME: NAME runs PATH from then on (hash
		// -p /bin/rm r; r x runs rm), as an alias's value does.
		for i := 1; i < len(args); i++ {
			a := args[i]
			if a == "--" || !strings.HasPrefix(a, "-") {
				break
			}
			if k := strings.IndexByte(a, 'p'); k > 0 {
				if v := a[k+1:]; v != "" {
					alias([]string{v}) // -p/bin/rm
				} else if i+1 < len(args) {
					alias([]string{args[i+1]})
				}
				break
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
		// Without -c or a script file, it runs its input.
		scripts, opaque := shellStdin(c)
		for _, s := range scripts {
			script(s)
		}
		if opaque {
			err = worse(err, errOpaque)
		}
		return out, err
	case toolOptions[name] != nil:
		// npm --loglevel silent publish is npm publish: rules on "npm
		// publish" see it.
		for _, sub := range toolSubcommands(args) {
			alias(append([]string{name}, args[sub:]...))
		}
		if name == "npm" || name == "pnpm" {
			for _, sh := range scriptShells(c) {
				add([]string{sh}) // npm test --script-shell=PROG runs PROG -c SCRIPT
			}
		}
		if name == "npm" && npmConfigFile(c) {
			err = worse(err, errOpaque) // the file may set script-shell
		}
		if len(args) > 1 {
			runPackage(name+" "+args[1], args[2:], add, script)
		}
		return out, err
	case name == "npx" || name == "bunx" || name == "uvx":
		runPackage(name, args[1:], add, script)
		return out, err
	case name == "uv" && uvGlobals(nil, args[1:]).sub > 0:
		// uv -q pip install x is uv pip install x: rules on "uv pip"
		// see it, and pip's on "pip install" (uvGlobals).
		alias(append([]string{"uv"}, args[1+uvGlobals(nil, args[1:]).sub:]...))
		return out, err
	case name == "uv" && len(args) > 1 && args[1] == "pip":
		alias(append([]string{"pip"}, args[2:]...)) // uv's pip interface
		return out, err
	case name == "uv" && len(args) > 2 && args[1] == "tool" && args[2] == "run":
		runPackage("uvx", args[3:], add, script)
		return out, err
	case (name == "uv" || name == "pipx") && len(args) > 1:
		runPackage(name+" "+args[1], args[2:], add, script)
		return out, err
	case pythonRE.MatchString(name):
		// python -m MODULE ARGS runs the module as its command (python -m
		// pip install x is pip install x).
		if mod, rest, ok := pythonModule(args[1:]); ok {
			alias(append([]string{mod}, rest...))
		}
		return out, err
	case name == "git":
		// Configuration values git runs as commands (git -c
		// core.pager='rm x' log), given on the line or before it.
		opaque := false
		config := func(key, v string, known bool) {
			switch r := gitConfigRuns(key); {
			case r == gitOpaque || r != gitNone && !known:
				opaque = true
			case r == gitScript:
				script(strings.TrimPrefix(v, "!"))
			case r == gitAlias && strings.HasPrefix(v, "!"):
				script(v[1:])
			case r == gitAlias:
				script("git " + v)
			}
		}
		for _, a := range c.environ() {
			k, v, _ := strings.Cut(a, "=")
			switch {
			case slices.Contains(gitEnvScripts, k):
				script(v)
			case strings.HasPrefix(k, "GIT_CONFIG") || k == "GIT_SSH" || k == "GIT_EXEC_PATH" || k == "GIT_TEMPLATE_DIR":
				opaque = true
			}
		}
		sub := 0 // the subcommand's index
	options:
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-c" && i+1 < len(args):
				i++
				k, v, _ := strings.Cut(args[i], "=")
				config(k, v, true)
			case strings.HasPrefix(a, "--config-env"):
				kv, ok := strings.CutPrefix(a, "--config-env=")
				if !ok && i+1 < len(args) {
					i++
					kv = args[i]
				}
				k, _, _ := strings.Cut(kv, "=")
				config(k, "", false) // the value is an environment variable's
			case strings.HasPrefix(a, "--exec-path="):
				opaque = true // git's commands from another directory
			case slices.Contains([]string{"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"}, a):
				i++ // its value
			case !strings.HasPrefix(a, "-"):
				sub = i
				break options // the subcommand: the rest are its
			}
		}
		if sub > 1 {
			// git -C dir push is git push run elsewhere: rules on "git
			// push" see it.
			alias(append([]string{"git"}, args[sub:]...))
		}
		if sub > 0 {
			gitRuns(args[sub:], add, script) // git rebase --exec CMD
		}
		if opaque {
			err = worse(err, errOpaque)
		}
		return out, err
	case name == "go":
		// go test -exec PROG and the build flag -toolexec PROG run PROG
		// (its words split as a shell splits them), go vet -vettool=PROG
		// runs PROG, given on the line or in GOFLAGS.
		goRuns := func(words []string) {
			for i := 0; i < len(words); i++ {
				a := words[i]
				if !strings.HasPrefix(a, "-") {
					continue
				}
				k, v, has := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
				if k != "exec" && k != "toolexec" && k != "vettool" {
					continue
				}
				if !has && i+1 < len(words) {
					i++
					v = words[i]
				}
				if k == "vettool" {
					add([]string{v}) // go vet -vettool=PROG runs PROG
				} else {
					script(v)
				}
			}
		}
		for _, a := range c.environ() {
			if k, v, _ := strings.Cut(a, "="); k == "GOFLAGS" {
				goRuns(strings.Fields(v))
			}
		}
		goRuns(args[1:])
		return out, err
	case name == "mapfile" || name == "readarray":
		// mapfile -C CALLBACK: bash evaluates the callback as it reads.
		callbacks, _ := builtinWords(args, "C", "cdnOsu")
		for _, cb := range callbacks {
			script(cb)
		}
		return out, err
	case name == "parallel" || name == "sem":
		// GNU parallel runs its command words, or each input line or
		// argument (parallel ::: 'rm x'), as shell scripts.
		return nil, errOpaque
	case slices.Contains(debuggers, name):
		// gdb runs its program (--args PROGRAM ARGS…, -ex run), and any
		// shell command its own commands name (-ex 'shell rm x', -x FILE,
		// its init files); so does lldb (-- PROGRAM, -o 'platform shell
		// …').
		return nil, errOpaque
	case name == "sg":
		// sg [-] GROUP [-c] COMMAND: the command string runs in sh -c.
		rest := args[1:]
		if len(rest) > 0 && rest[0] == "-" {
			rest = rest[1:]
		}
		if len(rest) > 2 && rest[1] == "-c" {
			script(rest[2])
		} else if len(rest) > 1 {
			script(rest[1])
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
		return out, err // command -v only looks the name up
	}
	if name == "runuser" && runsAsUser(args) {
		w.noCommand = false // runuser -u USER COMMAND…
	}
	var assigns []string // env's NAME=VALUE words: the command's environment
	run := func(rest []string) {
		switch {
		case w.joined:
			script(strings.Join(rest, " "))
		case len(assigns) > 0 && len(rest) > 0:
			r := simpleCmd{args: slices.Clone(rest), assigns: assigns, exported: c.environ(), expands: c.expands, subst: c.subst, from: c.from, inputs: c.inputs, here: c.here}
			out = append(out, r)
			more, e := wrapped(r, depth+1)
			out = append(out, more...)
			err = worse(err, e)
		case slices.Contains(keywords, name):
			alias(slices.Clone(rest)) // then rm: the command after the keyword
		default:
			add(slices.Clone(rest))
		}
	}
	i, operands := 1, 0
	for ; i < len(args); i++ {
		a := args[i]
		if w.joined && (abbreviates(a, "--exec") || clusterHas(a, w, 'x')) {
			w.joined = false // watch -x
		}
		switch {
		case name == "env" && isAssignment(a):
			assigns = append(assigns, a)
		case a == "--" && w.noCommand:
			// su USER -- ARGS…: the shell's arguments, -c among them.
		case a == "--":
			rest := args[i+1:]
			if skip := w.count - operands; skip > 0 && skip <= len(rest) {
				rest = rest[skip:]
			}
			run(rest)
			return out, err
		case strings.HasPrefix(a, "-") && a != "-":
			opt, v, has, abbrev := option(a, w)
			if long, _, _ := strings.Cut(a, "="); !has && (abbrev || slices.ContainsFunc(w.maybe, func(m string) bool { return abbreviates(long, m) })) {
				// Its value or the command (an option that may take none,
				// or a flag of the abbreviation's exact name): read both,
				// the value skipped below, the command here.
				alias(append([]string{name}, args[i+1:]...))
				opt = cmp.Or(opt, long)
			}
			if opt == "" {
				continue // flags
			}
			if !has && i+1 < len(args) {
				i++ // its value (-u root, -Eu root)
				v = args[i]
			}
			switch {
			case slices.Contains(w.script, opt):
				script(v)
			case slices.Contains(w.runs, opt):
				add([]string{v})
			case name == "env" && (opt == "-S" || opt == "--split-string"):
				// env -S 'cmd args', -S'cmd args': the string is split
				// into the command.
				script(v)
				return out, err
			case name == "strace" && (opt == "-o" || opt == "--output") && (strings.HasPrefix(v, "|") || strings.HasPrefix(v, "!")):
				script(v[1:]) // strace -o '|cmd': the output piped to cmd
			}
		case w.noCommand || operands < w.count:
			operands++
		default:
			run(args[i:])
			return out, err
		}
	}
	if loginShell(name, args, w) {
		// No command: the shell it runs reads its input (curl … | sudo -s).
		scripts, opaque := stdinText(c)
		for _, s := range scripts {
			script(s)
		}
		if opaque {
			err = worse(err, errOpaque)
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

// option reads one option word of w: opt is the option that takes a
// value ("" for flags), v its value when the word holds it (has): the
// rest of a cluster of short options (-n1, -Eu root: -u's value is the
// next word; a cluster ends at an option whose value is optional), or
// what follows "=" in a long option, which may be abbreviated (--us root
// is --user root; abbrev: a flag of that exact name would not take the
// next word, so the caller reads both).
func option(a string, w wrapper) (opt, v string, has, abbrev bool) {
	if long, ok := strings.CutPrefix(a, "--"); ok {
		long, v, has = strings.Cut(long, "=")
		if slices.Contains(w.valued, "--"+long) {
			return "--" + long, v, has, false
		}
		for _, o := range w.valued {
			if abbreviates("--"+long, o) {
				return o, v, has, true
			}
		}
		return "", "", false, false
	}
	if len(a) < 2 || a[0] != '-' {
		return "", "", false, false
	}
	for k := 1; k < len(a); k++ {
		o := "-" + a[k:k+1]
		if slices.Contains(w.optional, o) {
			return "", "", false, false
		}
		if slices.Contains(w.valued, o) {
			return o, a[k+1:], k+1 < len(a), false
		}
	}
	return "", "", false, false
}

// How git uses a configuration value.
const (
	gitNone   = iota
	gitScript // a shell command (core.pager, credential.helper's "!…")
	gitAlias  // alias.*: "!…" a shell command, otherwise git's arguments
	gitOpaque // what runs cannot be told (include.path, core.hooksPath)
)

// gitScriptKeys end the names of the configuration keys whose values git
// runs as commands (core.pager, core.sshCommand, gpg.program,
// diff.*.textconv, filter.*.smudge, merge.*.driver, credential.helper,
// remote.*.uploadpack, …): read as scripts, where a key that is no
// command (a boolean) reads as a harmless one.
var gitScriptKeys = []string{"command", "cmd", "program", "editor", "pager", "helper", "hook", "driver", "proxy", "external",
	"askpass", "textconv", "clean", "smudge", "process", "filter", "pack", "fsmonitor", "browser", "httpd", "vcs"}

// gitEnvScripts are the environment variables git runs as commands.
var gitEnvScripts = []string{"GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF",
	"GIT_ASKPASS", "GIT_PROXY_COMMAND", "PAGER", "EDITOR", "VISUAL"}

// gitConfigRuns tells how git uses the value of the configuration key
// (section.name or section.subsection.name; case-insensitive but for the
// subsection, which is matched whatever its case).
func gitConfigRuns(key string) int {
	k := strings.ToLower(key)
	section, _, _ := strings.Cut(k, ".")
	last := k[strings.LastIndex(k, ".")+1:]
	switch {
	case section == "alias":
		return gitAlias
	case section == "include" || section == "includeif" || section == "protocol" && last == "allow" ||
		last == "path" || last == "hookspath" || last == "templatedir":
		// Another configuration file, hooks or programs from a directory,
		// or a transport (ext::) that runs its URL.
		return gitOpaque
	case section == "pager" || slices.ContainsFunc(gitScriptKeys, func(s string) bool { return strings.HasSuffix(last, s) }):
		return gitScript
	}
	return gitNone
}

// clusterHas reports whether a cluster of w's short options has the flag
// letter (before an option that takes the rest of the word).
func clusterHas(a string, w wrapper, letter byte) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return false
	}
	for k := 1; k < len(a); k++ {
		if a[k] == letter {
			return true
		}
		if o := "-" + a[k:k+1]; slices.Contains(w.valued, o) || slices.Contains(w.optional, o) {
			return false
		}
	}
	return false
}

// runsAsUser reports runuser's -u (--user): its operands are then the
// command, as sudo's.
func runsAsUser(args []string) bool {
	for i := 1; i < len(args) && args[i] != "--"; i++ {
		opt, _, has, _ := option(args[i], suOptions)
		if opt == "-u" || opt == "--user" {
			return true
		}
		if opt != "" && !has {
			i++ // its value
		}
	}
	return false
}

// abbreviates reports whether long (--prop) names the long option o
// (--propagation) as getopt reads it: o itself or a prefix of it.
func abbreviates(long, o string) bool {
	return len(long) > 2 && strings.HasPrefix(o, "--") && strings.HasPrefix(o, long)
}
