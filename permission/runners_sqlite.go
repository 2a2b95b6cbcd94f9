package permission

import (
	"regexp"
	"slices"
	"strings"
)

// sqliteValued are the options of the sqlite3 shell that take values
// (written -NAME or --NAME), and how many words each takes.
var sqliteValued = map[string]int{
	"cmd": 1, "escape": 1, "heap": 1, "init": 1, "lookaside": 2, "maxsize": 1, "mmap": 1, "newline": 1,
	"nonce": 1, "nullvalue": 1, "pagecache": 2, "separator": 1, "sorterref": 1, "vfs": 1,
}

// sqliteQuiet are the sqlite3 shell's dot-commands that only read the
// database or set the form of its output; sqliteLoud those that run a
// program (.shell, .system; .once, .output, .import and .read of
// "|COMMAND", .excel), load code (.load) or write or read files. The
// shell takes a dot-command abbreviated, so one is known quiet only
// when its name abbreviates a quiet one and no loud one (.s may be
// .shell).
var (
	sqliteQuiet = []string{"bail", "changes", "databases", "dbinfo", "dump", "echo", "eqp", "exit", "explain",
		"fullschema", "headers", "help", "indexes", "indices", "limit", "mode", "nullvalue", "print", "prompt",
		"quit", "schema", "separator", "show", "stats", "tables", "timeout", "timer", "version", "width"}
	sqliteLoud = []string{"archive", "backup", "cd", "clone", "excel", "import", "iotrace", "load", "log",
		"once", "open", "output", "read", "restore", "save", "shell", "system", "testcase", "trace"}
	sqliteDotRE = regexp.MustCompile(`^\s*\.([A-Za-z0-9_]+)`)
	// sqliteCodeRE: SQL functions of the sqlite3 shell that run a
	// program (edit), load code (load_extension) or write a file
	// (writefile), and statements that write another database file.
	sqliteCodeRE = regexp.MustCompile(`(?i)\b(edit|load_extension|writefile)\s*\(|\battach\b|\bvacuum\b[^;]*\binto\b`)
)

// sqliteRuns reports an sqlite3 shell (c) that may run what cannot be
// told from its words: a dot-command not known quiet (sqliteQuiet), or
// SQL that runs a program or writes a file (sqliteCodeRE), in its
// commands (the words after the database, -cmd's) or the text the line
// gives it as its input (a here-document, a here-string); or -A, whose
// archive commands write files.
func sqliteRuns(c simpleCmd) bool {
	texts, _ := stdinText(c) // a file it reads is the workspace's, as bash x.sh is
	words := c.args[1:]
	db := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		if len(w) > 1 && w[0] == '-' {
			o := strings.TrimPrefix(w[1:], "-")
			if strings.HasPrefix(o, "A") {
				return true
			}
			if o == "cmd" && i+1 < len(words) {
				texts = append(texts, words[i+1])
			}
			i += sqliteValued[o]
			continue
		}
		if db {
			texts = append(texts, w)
		}
		db = true
	}
	return slices.ContainsFunc(texts, func(t string) bool {
		if sqliteCodeRE.MatchString(t) {
			return true
		}
		for _, line := range strings.Split(t, "\n") {
			m := sqliteDotRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			name := strings.ToLower(m[1])
			abbreviates := func(full string) bool { return strings.HasPrefix(full, name) }
			if !slices.ContainsFunc(sqliteQuiet, abbreviates) || slices.ContainsFunc(sqliteLoud, abbreviates) {
				return true
			}
		}
		return false
	})
}
