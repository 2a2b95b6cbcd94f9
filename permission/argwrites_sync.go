package permission

import (
	"slices"
	"strings"
)

// rsyncShort are rsync's short options that take a value, and rsyncLong
// its long options that take one (with the flags an abbreviation of one
// could be taken for).
const rsyncShort = "eBfMT@"

var rsyncLong = []string{"rsh=", "block-size=", "filter=", "remote-option=", "temp-dir=", "modify-window=",
	"exclude=", "include=", "exclude-from=", "include-from=", "files-from=", "log-file=", "log-file-format=",
	"log-format=", "out-format=", "write-batch=", "only-write-batch=", "read-batch=", "backup-dir=", "partial-dir=",
	"compare-dest=", "copy-dest=", "link-dest=", "suffix=", "chmod=", "chown=", "usermap=", "groupmap=",
	"timeout=", "contimeout=", "port=", "sockopts=", "password-file=", "rsync-path=", "max-size=", "min-size=",
	"max-delete=", "max-alloc=", "bwlimit=", "protocol=", "iconv=", "checksum-choice=", "checksum-seed=",
	"compress-choice=", "compress-level=", "skip-compress=", "outbuf=", "stop-after=", "stop-at=", "info=",
	"debug=", "address=", "copy-as=", "early-input=", "dparam=", "config=",
	"backup", "partial", "compress", "checksum", "group", "remove-source-files"}

// rsyncWrites are the files rsync writes on this machine that its
// arguments name: the destination (its last operand, of two or more)
// when it is not another host's (remotePath), and there, under it when
// relative, --temp-dir (-T), --backup-dir and --partial-dir; the log of
// --log-file and the batch of --write-batch and --only-write-batch; the
// sources here with --remove-source-files, which it removes.
func rsyncWrites(args []string) []string {
	var out, underDest, sources []string
	remove := false
	operands := getopt(args, rsyncShort, rsyncLong, func(opt, v string) {
		switch opt {
		case "-T", "--temp-dir", "--backup-dir", "--partial-dir":
			underDest = append(underDest, v)
		case "--log-file", "--write-batch", "--only-write-batch":
			out = append(out, v)
		case "--remove-source-files":
			remove = true
		}
	})
	if len(operands) < 2 {
		return out // one operand: rsync lists it
	}
	dest := operands[len(operands)-1]
	if !remotePath(dest) {
		out = append(out, dest)
		for _, d := range underDest {
			out = append(out, underDir(dest, d))
		}
	}
	if remove {
		sources = operands[:len(operands)-1]
	}
	for _, s := range sources {
		if !remotePath(s) {
			out = append(out, s)
		}
	}
	return out
}

// scpWrites are the files scp writes on this machine: its destination
// (the last operand, of two or more), when not another host's.
func scpWrites(args []string) []string {
	operands := getopt(args, "cFiJlmoPSDX", nil, nil)
	if len(operands) < 2 || remotePath(operands[len(operands)-1]) {
		return nil
	}
	return operands[len(operands)-1:]
}

// remotePath reports whether an operand of rsync or scp names a file of
// another host: HOST:PATH, USER@HOST:PATH, HOST::MODULE (a ":" before
// any "/"), rsync:// and scp:// URLs.
func remotePath(p string) bool {
	if slices.ContainsFunc([]string{"rsync://", "scp://"}, func(s string) bool { return strings.HasPrefix(p, s) }) {
		return true
	}
	colon := strings.IndexByte(p, ':')
	return colon > 0 && !strings.Contains(p[:colon], "/")
}
