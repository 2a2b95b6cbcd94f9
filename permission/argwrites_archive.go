package permission

import "strings"

// tarValued are GNU tar's short options that take a value, and tarLong
// its long options that this reads (with those an abbreviation of one
// could be taken for).
const tarValued = "bCfFgHIKLNTVX"

var tarLong = []string{"directory=", "file=", "extract", "get", "create", "append", "update", "catenate",
	"concatenate", "delete", "index-file=", "files-from=", "exclude-from=", "listed-incremental=",
	"blocking-factor=", "info-script=", "new-volume-script=", "starting-file=", "newer=", "label=",
	"tape-length=", "use-compress-program=", "exclude=", "transform=", "xform=", "owner=", "group=",
	"mode=", "mtime=", "format=", "to-command=", "absolute-names"}

// tarWrites are the files tar writes that its arguments name: where it
// extracts (each -C DIR, or the current directory), the archive it
// creates or changes (-f with -c, -r, -u, -A or --delete) and
// --index-file's; with -P (--absolute-names), which extracts members
// under their names, "/" and ".." kept, a file not known here
// (unknownFile). A first word without a dash is read as tar reads it:
// each letter an option, the values of those that take one following in
// order (tar xfC a.tar DIR).
func tarWrites(args []string) []string {
	if len(args) > 0 && args[0] != "" && !strings.HasPrefix(args[0], "-") {
		var opts []string
		next := 1
		for _, l := range args[0] {
			opts = append(opts, "-"+string(l))
			if strings.ContainsRune(tarValued, l) && next < len(args) {
				opts = append(opts, args[next])
				next++
			}
		}
		args = append(opts, args[next:]...)
	}
	var dirs, archives, out []string
	extract, changes, absolute := false, false, false
	getopt(args, tarValued, tarLong, func(opt, v string) {
		switch opt {
		case "-C", "--directory":
			dirs = append(dirs, v)
		case "-f", "--file":
			archives = append(archives, v)
		case "--index-file":
			out = append(out, v)
		case "-x", "--extract", "--get":
			extract = true
		case "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete":
			changes = true
		case "-P", "--absolute-names":
			absolute = true
		}
	})
	if extract {
		if len(dirs) == 0 {
			dirs = []string{"."}
		}
		out = append(out, dirs...)
		if absolute {
			out = append(out, unknownFile)
		}
	}
	if changes {
		out = append(out, archives...)
	}
	return out
}

// unzipWrites are the directories unzip extracts into: -d DIR, or the
// current directory, and with -: (members' ".." kept) a file not known
// here (unknownFile); none when it only lists, tests, shows or pipes
// (-l, -t, -v, -Z, -z, -p, -c).
func unzipWrites(args []string) []string {
	dir := "."
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		for k := 1; k < len(a); k++ {
			switch a[k] {
			case 'l', 't', 'v', 'Z', 'z', 'p', 'c':
				return nil
			case ':':
				out = []string{unknownFile}
			case 'd', 'P', 'O', 'I': // their value: the rest of the word, or the next
				v := a[k+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				if a[k] == 'd' {
					dir = v
				}
				k = len(a)
			}
		}
	}
	return append(out, dir)
}
