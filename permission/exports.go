package permission

import (
	"path/filepath"
	"slices"
	"strings"
)

// exportsAfter gives each command of cmds, one line's, the variables the
// commands before it export, which it inherits as it does those set
// before it: export NAME=VALUE, declare -x (typeset -x, local -x)
// NAME=VALUE, NAME=VALUE and then export NAME (or export NAME and then
// NAME=VALUE), and every assignment after set -a (set -o allexport). A
// plain NAME=VALUE reaches none. The shell may skip a command (after
// || or in a subshell) or run it in the background: its exports are
// taken all the same, so a command sees at least what it inherits.
//
// Only the variables read in a command's environment (environKey) are
// carried, each once with its last value, so that what each command is
// given stays small however many the line exports.
func exportsAfter(cmds []simpleCmd) {
	var env []string              // NAME=VALUE, exported so far
	at := map[string]int{}        // env's index of each environKey
	vars := map[string]string{}   // the line's assignments
	exported := map[string]bool{} // the names exported
	all := false                  // set -a: every assignment is exported
	export := func(name, v string) {
		exported[name] = true
		key, ok := environKey(name)
		if !ok {
			return
		}
		if i, seen := at[key]; seen {
			// The commands before hold env as it was: a copy changes.
			env = slices.Clone(env)
			env[i] = name + "=" + v
			return
		}
		at[key] = len(env)
		env = append(env, name+"="+v)
	}
	assign := func(a string, exports bool) {
		name, v, _ := strings.Cut(a, "=")
		name, _, _ = strings.Cut(strings.TrimSuffix(name, "+"), "[")
		vars[name] = v
		if exports || all || exported[name] {
			export(name, v)
		}
	}
	for i := range cmds {
		c := &cmds[i]
		c.exported = env[:len(env):len(env)] // shared: env only grows
		if len(c.args) == 0 {
			for _, a := range c.assigns {
				assign(a, false)
			}
			continue
		}
		name, words := c.args[0], c.args[1:]
		switch {
		case name == "set":
			all = all || setsAllexport(words)
			continue
		case name == "export" || slices.Contains([]string{"declare", "typeset", "local", "readonly"}, name):
		default:
			continue
		}
		exports := name == "export"
		k := 0 // the first operand's index
		for ; k < len(words) && (strings.HasPrefix(words[k], "-") || strings.HasPrefix(words[k], "+")); k++ {
			w := words[k]
			if w == "--" {
				k++
				break
			}
			// export -n and -f export no variable; declare -x does.
			if name == "export" && strings.ContainsAny(w, "nf") {
				exports = false
			}
			if name != "export" && strings.HasPrefix(w, "-") && strings.Contains(w, "x") {
				exports = true
			}
		}
		for _, w := range words[k:] {
			switch {
			case assignWordRE.MatchString(w):
				assign(w, exports)
			case exports:
				if v, ok := vars[w]; ok {
					export(w, v)
				} else {
					exported[w] = true // set later on the line, or inherited as it is
				}
			}
		}
	}
}

// environKey is the key under which a variable read in a command's
// environment (uvEnvOptions', UV_PROJECT_ENVIRONMENT, GOFLAGS,
// scriptShells' and npmConfigFile's, git's, toolRuns', envDirs') is
// carried from an export to the commands after it, one value for each
// key: npm's whatever their case, GIT_CONFIG* all under one, as any one
// makes git's commands unknown. ok is false for a variable read
// nowhere.
func environKey(name string) (key string, ok bool) {
	switch lower := strings.ToLower(name); {
	case strings.HasPrefix(name, "GIT_CONFIG"):
		return "GIT_CONFIG*", true
	case slices.Contains([]string{"npm_config_script_shell", "npm_config_userconfig", "npm_config_globalconfig", "npm_config_prefix"}, lower):
		return lower, true
	case uvEnvOptions[name] != "", slices.Contains(gitEnvScripts, name), slices.Contains(environRead, name),
		slices.Contains(envDirs["cargo"], name), slices.Contains(envDirs["go"], name):
		return name, true
	}
	return "", false
}

// environRead are the other variables read in a command's environment:
// by uv, go (GOFLAGS), git, tar, rsync, rg and make (toolRuns).
var environRead = []string{"UV_PROJECT_ENVIRONMENT", "GOFLAGS", "GIT_SSH", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR",
	"TAR_OPTIONS", "RSYNC_RSH", "RIPGREP_CONFIG_PATH", "MAKEFLAGS", "MFLAGS"}

// setsAllexport reports whether set, given its words after its name,
// turns on allexport: -a (in a cluster too) or -o allexport.
func setsAllexport(words []string) bool {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" || w == "-" || !strings.HasPrefix(w, "-") {
			return false
		}
		if strings.HasPrefix(w, "--") {
			continue
		}
		if strings.Contains(w, "a") {
			return true
		}
		if strings.Contains(w, "o") && i+1 < len(words) {
			i++ // -o's option name
			if words[i] == "allexport" {
				return true
			}
		}
	}
	return false
}

// envDirs are the variables naming directories a build tool writes, as
// its options do: cargo's target directory (--target-dir, also as
// build.target-dir), its install root (--root) and its home (the
// registry's downloads, what cargo install installs); go's GOPATH (each
// of its list: the module cache, go install's bin), GOBIN, GOMODCACHE
// and GOCACHE (the build cache).
var envDirs = map[string][]string{
	"cargo": {"CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR", "CARGO_INSTALL_ROOT", "CARGO_HOME"},
	"go":    {"GOPATH", "GOBIN", "GOMODCACHE", "GOCACHE"},
}

// envWrites are the directories c, cargo or go, writes that its
// environment from the line names (envDirs): set before it or exported
// before it on the line.
func envWrites(c simpleCmd) []string {
	if len(c.args) == 0 {
		return nil
	}
	keys := envDirs[filepath.Base(c.args[0])]
	if keys == nil {
		return nil
	}
	var out []string
	for _, a := range c.environ() {
		k, v, _ := strings.Cut(a, "=")
		if !slices.Contains(keys, k) {
			continue
		}
		for _, d := range filepath.SplitList(v) {
			if d != "" {
				out = append(out, d)
			}
		}
	}
	return out
}
