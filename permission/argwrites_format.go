package permission

import "slices"

// formatter is how a tool that rewrites source files in place reads its
// arguments (for getopt): short, its short options that take a value;
// long, its long options (those ending in "=" take a value, and the
// flags an abbreviation could be taken for); writes, the options that
// make it rewrite its operands (nil: it does unless told not to);
// reads, those that make it only show or check; outputs, the options
// whose value is a file it writes; dot, whether with no operand it
// rewrites the current directory's files.
type formatter struct {
	short                 string
	long                  []string
	writes, reads, output []string
	dot                   bool
}

// formatters are prettier, black, ruff (check and format: ruffWrites),
// isort and eslint.
var formatters = map[string]formatter{
	"prettier": {
		long: []string{"write", "check", "list-different", "config=", "ignore-path=", "plugin=", "parser=",
			"stdin-filepath=", "cache-location=", "log-level=", "print-width=", "tab-width=", "trailing-comma=",
			"arrow-parens=", "end-of-line=", "prose-wrap=", "quote-props=", "html-whitespace-sensitivity=",
			"embedded-language-formatting=", "object-wrap=", "experimental-operator-position=", "cursor-offset=",
			"range-start=", "range-end=", "config-precedence=", "plugin-search-dir="},
		writes: []string{"-w", "--write"},
		output: []string{"--cache-location"},
	},
	"black": {
		short: "ltWc",
		long: []string{"check", "diff", "code=", "line-length=", "target-version=", "include=", "exclude=",
			"extend-exclude=", "force-exclude=", "stdin-filename=", "workers=", "config=", "python-cell-magics=",
			"required-version=", "enable-unstable-feature="},
		reads: []string{"--check", "--diff", "-c", "--code"},
	},
	"ruff check": {
		short: "o",
		long: []string{"fix", "fix-only", "no-fix", "add-noqa", "diff", "config=", "select=", "ignore=",
			"extend-select=", "extend-ignore=", "per-file-ignores=", "extend-per-file-ignores=", "fixable=",
			"unfixable=", "extend-fixable=", "exclude=", "extend-exclude=", "target-version=", "line-length=",
			"output-format=", "output-file=", "cache-dir=", "stdin-filename=", "dummy-variable-rgx=", "extension="},
		writes: []string{"--fix", "--fix-only", "--add-noqa"},
		reads:  []string{"--diff"},
		output: []string{"-o", "--output-file", "--cache-dir"},
		dot:    true,
	},
	"ruff format": {
		long: []string{"check", "diff", "config=", "exclude=", "line-length=", "target-version=", "stdin-filename=",
			"range=", "cache-dir=", "extension="},
		reads:  []string{"--check", "--diff"},
		output: []string{"--cache-dir"},
		dot:    true,
	},
	"isort": {
		short: "alopsmw",
		long: []string{"check-only", "check", "diff", "stdout", "settings-path=", "settings-file=", "sp=", "skip=",
			"skip-glob=", "line-length=", "line-width=", "multi-line=", "profile=", "src=", "virtual-env=",
			"conda-env=", "add-import=", "known-first-party=", "known-third-party=", "python-version="},
		reads: []string{"-c", "--check-only", "--check", "--diff", "--stdout", "-d"},
	},
	"eslint": {
		short: "cfo",
		long: []string{"fix", "fix-dry-run", "config=", "ext=", "parser=", "parser-options=",
			"resolve-plugins-relative-to=", "rulesdir=", "plugin=", "rule=", "global=", "env=", "ignore-path=",
			"ignore-pattern=", "stdin-filename=", "format=", "output-file=", "max-warnings=", "cache-location=",
			"cache-file=", "cache-strategy=", "report-unused-disable-directives-severity=", "flag=", "fix-type="},
		writes: []string{"--fix"},
		output: []string{"-o", "--output-file", "--cache-location", "--cache-file"},
		dot:    true,
	},
}

// formatterWrites are the files and directories a formatter or linter
// (name, as formatters has it) rewrites, given its arguments: its
// operands (or "." for one that takes the current directory) when it
// rewrites them, and the files its output options name.
func formatterWrites(name string, args []string) []string {
	f := formatters[name]
	var out []string
	rewrites, reads := f.writes == nil, false
	operands := getopt(args, f.short, f.long, func(opt, v string) {
		switch {
		case slices.Contains(f.writes, opt):
			rewrites = true
		case slices.Contains(f.reads, opt):
			reads = true
		case slices.Contains(f.output, opt):
			out = append(out, v)
		}
	})
	if !rewrites || reads {
		return out
	}
	if len(operands) == 0 && f.dot {
		operands = []string{"."}
	}
	return append(out, operands...)
}

// ruffWrites are the files ruff writes, given its arguments: those of
// ruff check (or ruff with no command, as older ruff reads it) and of
// ruff format (formatterWrites).
func ruffWrites(args []string) []string {
	switch {
	case len(args) > 0 && (args[0] == "check" || args[0] == "format"):
		return formatterWrites("ruff "+args[0], args[1:])
	case len(args) == 0 || !slices.Contains(ruffCommands, args[0]):
		return formatterWrites("ruff check", args)
	}
	return nil
}

// ruffCommands are ruff's commands other than check and format.
var ruffCommands = []string{"rule", "config", "linter", "clean", "server", "analyze", "version", "help", "generate-shell-completion"}
