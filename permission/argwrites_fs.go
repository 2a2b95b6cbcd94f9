package permission

import (
	"slices"
	"strconv"
	"strings"
)

// fileChanges are the files that rm, rmdir, unlink, touch, mkdir,
// chmod, chown, chgrp, truncate, shred, sed -i and the compressors
// (compressed, lz4Written) (name) change or remove, given its arguments (as the
// command reads them): their operands, but for chmod's mode, chown's
// owner and chgrp's group (without --reference) and sed's script
// (without -e or -f). ok is false for another command.
func fileChanges(name string, args []string) (files []string, ok bool) {
	switch name {
	case "rm", "rmdir", "unlink":
		return getopt(args, "", nil, nil), true
	case "touch":
		return getopt(args, "dtr", []string{"date=", "reference=", "time="}, nil), true
	case "mkdir":
		return getopt(args, "m", []string{"mode="}, nil), true
	case "truncate":
		return getopt(args, "sr", []string{"size=", "reference=", "io-blocks", "no-create"}, nil), true
	case "shred":
		return getopt(args, "ns", []string{"iterations=", "size=", "random-source=", "remove"}, nil), true
	case "chmod", "chown", "chgrp":
		return attributeChanges(name, args), true
	case "sed":
		return sedInPlace(args), true
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "zstd", "unzstd",
		"pigz", "unpigz", "pbzip2", "lzip", "plzip", "lzop", "brotli":
		return compressed(name, args), true
	case "lz4", "unlz4":
		return lz4Written(args), true
	}
	return nil, false
}

// compressed are the files a compressor (name: gzip, xz, bzip2, zstd,
// pigz, brotli, …) writes, given its arguments: each operand, which it
// replaces with its compressed or decompressed copy beside it (with -k,
// keeps beside it), or zstd's and brotli's -o file; none with -c, -l or
// -t, which write the standard output or nothing.
func compressed(name string, args []string) []string {
	valued, long := "oS", []string{"list", "output=", "stdout", "suffix=", "test", "to-stdout"}
	if name == "brotli" {
		valued, long = "oSqwD", append(long, "quality=", "lgwin=", "large_window=", "dictionary=")
	}
	stdout := false
	var named []string
	operands := getopt(args, valued, long, func(opt, v string) {
		switch opt {
		case "-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test":
			stdout = true
		case "-o", "--output":
			named = append(named, v)
		}
	})
	if stdout || len(named) > 0 {
		return named
	}
	return operands
}

// lz4Written are the files lz4 (unlz4) writes, given its arguments: its
// second operand, the file it writes the first into; with one, that
// one, beside which it writes its compressed (or decompressed) copy;
// with -m (--multiple), each operand so; none with -c, -t or --list,
// which write the standard output or nothing.
func lz4Written(args []string) []string {
	stdout, multiple := false, false
	operands := getopt(args, "D", []string{"dictionary=", "list", "multiple", "stdout", "test", "to-stdout"}, func(opt, _ string) {
		switch opt {
		case "-c", "--stdout", "--to-stdout", "-t", "--test", "--list":
			stdout = true
		case "-m", "--multiple":
			multiple = true
		}
	})
	switch {
	case stdout:
		return nil
	case multiple || len(operands) < 2:
		return operands
	}
	return operands[1:2]
}

// attributeChanges are the files chmod, chown or chgrp (name) changes:
// its operands after the first (the mode, owner or group), or all of
// them with --reference. chmod takes a mode that starts with "-" (-w,
// -x,g+r) for the mode, as chmod itself does.
func attributeChanges(name string, args []string) []string {
	modeSeen := false
	var rest []string
	for i, a := range args {
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if name == "chmod" && !modeSeen && len(a) > 1 && a[0] == '-' && a[1] != '-' &&
			strings.Trim(a[1:], "rwxXstugoa+-=,01234567") == "" {
			modeSeen = true
			continue
		}
		rest = append(rest, a)
	}
	reference := false
	operands := getopt(rest, "", []string{"from=", "reference="}, func(opt, _ string) {
		reference = reference || opt == "--reference"
	})
	if modeSeen || reference || len(operands) == 0 {
		return operands
	}
	return operands[1:]
}

// sedInPlace are the files sed edits in place (-i[SUFFIX],
// --in-place[=SUFFIX]): its operands but the script, the first of them
// when no -e or -f gives one; none without -i.
func sedInPlace(args []string) []string {
	inPlace := false
	var rest []string
	for i, a := range args {
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' {
			// -i's suffix is the rest of the word: -ni, -i.bak, -Ei~.
			if k := strings.IndexAny(a, "iefl"); k > 0 && a[k] == 'i' {
				inPlace = true
				if a = a[:k]; a == "-" {
					continue
				}
			}
		}
		rest = append(rest, a)
	}
	scripted := false
	operands := getopt(rest, "efl", []string{"expression=", "file=", "follow-symlinks", "in-place", "line-length="}, func(opt, _ string) {
		switch opt {
		case "-e", "--expression", "-f", "--file":
			scripted = true
		case "--in-place":
			inPlace = true
		}
	})
	if !inPlace {
		return nil
	}
	if !scripted && len(operands) > 0 {
		operands = operands[1:]
	}
	return operands
}

// findDeleted are the starting points of a find with -delete (the
// current directory when it names none), whose files it may remove;
// none without -delete.
func findDeleted(args []string) []string {
	if !slices.Contains(args, "-delete") {
		return nil
	}
	return findStartingPoints(args)
}

// findStartingPoints are the starting points of find, given its
// arguments (the current directory when they name none).
func findStartingPoints(args []string) []string {
	i := 0 // past find's own options: -H, -L, -P, -D DEBUGOPTS, -OLEVEL
	for i < len(args) && (slices.Contains([]string{"-H", "-L", "-P", "-D"}, args[i]) || strings.HasPrefix(args[i], "-O")) {
		if args[i] == "-D" {
			i++
		}
		i++
	}
	var out []string
	for _, a := range args[min(i, len(args)):] {
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == "," {
			break
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		out = append(out, ".")
	}
	return out
}

// outputFiles are the files uniq and xxd (name) write, their second
// operand, those iconv and tree write, -o's (iconv's --output), those
// gofmt and goimports rewrite with -w (gofmtWrites), and openssl's
// -out, -keyout and the like (opensslWritten; --out, -out=FILE), and
// the serial file x509 -CAcreateserial writes beside -CA's file.
func outputFiles(name string, args []string) []string {
	var out []string
	named := func(opt, v string) {
		if opt == "-o" || opt == "--output" {
			out = append(out, v)
		}
	}
	switch name {
	case "uniq":
		operands := getopt(args, "fsw", []string{"all-repeated", "check-chars=", "group", "skip-chars=", "skip-fields="}, nil)
		return operands[min(1, len(operands)):min(2, len(operands))]
	case "xxd":
		operands := getopt(args, "cglnosR", nil, nil)
		return operands[min(1, len(operands)):min(2, len(operands))]
	case "iconv":
		getopt(args, "fto", []string{"from-code=", "output=", "to-code="}, named)
	case "tree":
		getopt(args, "HILPTo", []string{"charset=", "filelimit=", "fromfile", "sort=", "timefmt="}, named)
	case "gofmt", "goimports":
		return gofmtWrites(args)
	case "openssl":
		ca, createSerial, serial := "", false, false
		for i := 0; i < len(args); i++ {
			// Its parser takes -NAME or --NAME, the value glued
			// (=VALUE) or the next word.
			name, v, glued := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-"), "=")
			if !strings.HasPrefix(args[i], "-") {
				continue
			}
			createSerial = createSerial || name == "CAcreateserial"
			if name != "CA" && !slices.Contains(opensslWritten, name) {
				continue
			}
			if !glued {
				if i+1 == len(args) {
					break
				}
				i++
				v = args[i]
			}
			if name == "CA" {
				ca = v
				continue
			}
			serial = serial || name == "CAserial"
			out = append(out, v)
		}
		if createSerial && ca != "" && !serial {
			// x509 -CAcreateserial writes the CA's serial file, named
			// as openssl names it: -CA's file up to its last ".", then
			// ".srl".
			if k := strings.LastIndex(ca, "."); k >= 0 {
				ca = ca[:k]
			}
			out = append(out, ca+".srl")
		}
	}
	return out
}

// opensslWritten are the options of openssl's commands that name a file
// (or, -outdir, a directory) it writes.
var opensslWritten = []string{"out", "keyout", "writerand", "sess_out", "keylogfile", "reqout", "respout", "outdir", "CAserial"}

// gofmtWrites are the files gofmt (or goimports) writes, given its
// arguments as Go's flag package reads them (flags up to the first
// operand or "--", -NAME or --NAME, =VALUE or the next word): with -w,
// its operands (files, and directories it rewrites the files of), and
// the profiles it writes.
func gofmtWrites(args []string) []string {
	var out, operands []string
	write := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = args[i+1:]
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			operands = args[i:]
			break
		}
		name, v, has := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "w":
			on, err := strconv.ParseBool(v)
			write = !has || err != nil || on
		case "r", "local", "srcdir", "cpuprofile", "memprofile", "memrate", "trace":
			if !has && i+1 < len(args) {
				i++
				v = args[i]
			}
			if strings.HasSuffix(name, "profile") || name == "trace" {
				out = append(out, v)
			}
		}
	}
	if write {
		out = append(out, operands...)
	}
	return out
}
