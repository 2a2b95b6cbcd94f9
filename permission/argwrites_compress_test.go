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

// TestParallelCompressorWritesItsFiles: pigz and pbzip2, which a build
// script runs in place of gzip and bzip2, and lzip and lzop replace (or
// write beside) each file they are given as gzip does, but "pigz:*"
// allowed "pigz /srv/other/data.db", only gzip's family being read so.
// They are now read as compressors too.
func TestParallelCompressorWritesItsFiles(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "pigz", "unpigz", "pbzip2", "lzip", "plzip", "lzop"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"pigz " + other + "/data.db",
		"pigz -k -p 4 " + other + "/data.db",
		"unpigz " + other + "/x.gz",
		"pbzip2 " + other + "/x",
		"lzip " + other + "/x",
		"plzip -d " + other + "/x.lz",
		"lzop " + other + "/x",
		"lzip x -o " + other + "/x.lz",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"pigz -k build.log",
		"pigz -dc " + other + "/x.gz > x",
		"unpigz -c " + other + "/x.gz > x",
		"pbzip2 -dc " + other + "/x.bz2 > x",
		"lzip -l " + other + "/x.lz",
		"lzop -t " + other + "/x.lzo",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
