package permission

import (
	"testing"
)

// TestCompressorWritesItsFiles: gzip, xz, bzip2, zstd and the like
// replace each file they are given with its compressed (or, with -d,
// its decompressed) copy beside it, so "gzip:*" allowed "gzip
// /srv/other/data.db", which removed that file and wrote data.db.gz
// there. Their operands are now files they write (but with -c, -l or
// -t, which write the standard output or nothing; zstd -o's file is
// written): outside, the line asks.
func TestCompressorWritesItsFiles(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "gzip", "gunzip", "bzip2", "xz", "unxz", "zstd", "cd"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"gzip " + other + "/data.db",
		"gzip -k " + other + "/data.db",
		"gzip -9r " + other,
		"gunzip " + other + "/x.gz",
		"gzip -d " + other + "/x.gz",
		"bzip2 " + other + "/x",
		"xz -T0 " + other + "/x",
		"unxz " + other + "/x.xz",
		"zstd --rm " + other + "/x",
		"zstd x -o " + other + "/x.zst",
		"cd " + other + " && gzip x",
		"gzip -S .z " + other + "/x",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"gzip -k build.log",
		"gzip -d vendor.tar.gz",
		"gzip -c " + other + "/x > x.gz",
		"gunzip -c " + other + "/x.gz > x",
		"gzip -l " + other + "/x.gz",
		"gzip -t " + other + "/x.gz",
		"xz -dc " + other + "/x.xz > x",
		"zstd -d " + other + "/x.zst -o x",
		"zstd -dc " + other + "/x.zst > x",
		"gzip < " + other + "/x > x.gz",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
