package permission

import (
	"slices"
	"strings"
)

// goWriteFlags are the flags of go build, go test and go mod vendor whose
// value is a file go writes (or a directory it writes into).
var goWriteFlags = []string{"o", "pkgdir", "coverprofile", "cpuprofile", "memprofile", "blockprofile",
	"mutexprofile", "trace", "outputdir"}

// goWrites are the files go writes that its arguments name: the values
// of -o, -coverprofile, -cpuprofile and the other flags of goWriteFlags
// (-flag VALUE, -flag=VALUE, with one dash or two, and test's -test.flag
// spellings), after go -C DIR under DIR. Flags are read until the first
// word that is no flag, as go reads them; a flag's value that looks like
// a flag (-ldflags -o) is read as one, so a word is more often taken as
// a file written than not.
func goWrites(args []string) []string {
	dir := ""
	if len(args) > 1 && (args[0] == "-C" || args[0] == "--C") {
		dir, args = args[1], args[2:]
	} else if len(args) > 0 && (strings.HasPrefix(args[0], "-C=") || strings.HasPrefix(args[0], "--C=")) {
		_, dir, _ = strings.Cut(args[0], "=")
		args = args[1:]
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue // the subcommand (build, test, mod vendor) and packages
		}
		name, v, attached := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !slices.Contains(goWriteFlags, strings.TrimPrefix(name, "test.")) {
			continue
		}
		if !attached && i+1 < len(args) {
			i++
			v = args[i]
		}
		if v != "" {
			out = append(out, underDir(dir, v))
		}
	}
	return out
}

// compilers are the C compilers and linkers whose -o names the file
// they write.
var compilers = []string{"cc", "c++", "gcc", "g++", "clang", "clang++", "ld", "ld.gold", "ld.lld", "tcc"}

// compilerWrites is the file a C compiler or linker writes that its
// arguments name: -o FILE, -oFILE, --output FILE, --output=FILE.
func compilerWrites(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "-o" || a == "--output") && i+1 < len(args):
			i++
			out = append(out, args[i])
		case strings.HasPrefix(a, "--output="):
			out = append(out, strings.TrimPrefix(a, "--output="))
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			out = append(out, a[2:])
		}
	}
	return out
}
