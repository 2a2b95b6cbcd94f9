package permission

// patchLong are GNU patch's long options that take a value, with the
// flags an abbreviation of one could be taken for.
var patchLong = []string{"prefix=", "directory=", "ifdef=", "fuzz=", "get=", "input=", "output=", "strip=",
	"reject-file=", "version-control=", "debug=", "basename-prefix=", "suffix=", "quoting-style=",
	"reject-format=", "read-only=", "backup", "backup-if-mismatch", "batch", "binary", "context", "dry-run",
	"ed", "force", "forward", "follow-symlinks", "ignore-whitespace", "merge", "normal", "posix", "quiet",
	"remove-empty-files", "reverse", "set-time", "set-utc", "silent", "unified", "verbose"}

// patchWrites are the files patch writes that its arguments name, under
// the directory of -d (--directory), where it changes to first: that
// directory (or the current one), in which it patches the files its
// patch names; the file to patch (its first operand), the output of -o
// (--output; then that alone), the rejects of -r (--reject-file) and
// the backups -B (--prefix) leads to. Nothing with --dry-run.
func patchWrites(args []string) []string {
	dir, output := "", ""
	var named []string
	dryRun := false
	operands := getopt(args, "BdDFgioprVxYz", patchLong, func(opt, v string) {
		switch opt {
		case "-d", "--directory":
			dir = underDir(dir, v)
		case "-o", "--output":
			output = v
		case "-r", "--reject-file", "-B", "--prefix":
			named = append(named, v)
		case "--dry-run":
			dryRun = true
		}
	})
	if dryRun {
		return nil
	}
	if output != "" {
		named = append(named, output)
	} else {
		named = append(named, ".")
		if len(operands) > 0 {
			named = append(named, operands[0])
		}
	}
	var out []string
	for _, p := range named {
		if p != "-" {
			out = append(out, underDir(dir, p))
		}
	}
	return out
}

// splitWrites are the files split and csplit (name) write: those their
// prefix starts (split's second operand, csplit's -f or --prefix), "x"
// and "xx" in the current directory without one.
func splitWrites(name string, args []string) []string {
	if name == "csplit" {
		prefix := "xx"
		getopt(args, "bfn", []string{"suffix-format=", "prefix=", "digits=", "keep-files", "suppress-matched",
			"quiet", "silent", "elide-empty-files"}, func(opt, v string) {
			if opt == "-f" || opt == "--prefix" {
				prefix = v
			}
		})
		return []string{prefix}
	}
	operands := getopt(args, "abClnt", []string{"suffix-length=", "additional-suffix=", "bytes=", "line-bytes=",
		"lines=", "number=", "separator=", "filter=", "numeric-suffixes", "hex-suffixes", "elide-empty-files",
		"unbuffered", "verbose"}, nil)
	if len(operands) < 2 {
		return []string{"x"}
	}
	return operands[1:2]
}
